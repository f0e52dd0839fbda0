// Starts the web app. A file, not an inline script: the page's Content-Security-Policy
// runs this origin's scripts only.
import init from "/levelrail_web.js";
init({ module_or_path: "/levelrail_web_bg.wasm" });
