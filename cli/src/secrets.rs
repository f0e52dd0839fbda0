//! Secret input that is not on the command line: piped stdin (one line per value, or all of
//! stdin for a JSON document) or, on a terminal, a no-echo prompt. [`SecretSource`] is the raw
//! I/O, so tests script both paths; [`read_secret`] is the logic on top of it.
use std::io::{self, BufRead as _, IsTerminal as _, Read as _};

use secrecy::SecretString;

use crate::error::CliError;

/// Where secret values come from when they are not given as flags.
pub trait SecretSource {
    /// True when stdin is an interactive terminal: values are then prompted for without echo.
    fn is_terminal(&self) -> bool;
    /// Reads the next line of piped stdin (line ending included or not); `None` at the end of
    /// the input.
    fn read_line(&mut self) -> io::Result<Option<String>>;
    /// Reads everything left on piped stdin.
    fn read_to_end(&mut self) -> io::Result<String>;
    /// Shows `prompt` on the terminal and reads one line without echoing it.
    fn prompt_hidden(&mut self, prompt: &str) -> io::Result<String>;
}

/// The process's real stdin, prompting through `rpassword` when it is a terminal.
#[derive(Debug, Default)]
pub struct StdinSecrets;

impl SecretSource for StdinSecrets {
    fn is_terminal(&self) -> bool {
        io::stdin().is_terminal()
    }

    fn read_line(&mut self) -> io::Result<Option<String>> {
        let mut line = String::new();
        let read = io::stdin().lock().read_line(&mut line)?;
        Ok((read > 0).then_some(line))
    }

    fn read_to_end(&mut self) -> io::Result<String> {
        let mut all = String::new();
        io::stdin().lock().read_to_string(&mut all)?;
        Ok(all)
    }

    fn prompt_hidden(&mut self, prompt: &str) -> io::Result<String> {
        rpassword::prompt_password(prompt)
    }
}

/// How a value is laid out on piped stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// One line (a token, a key id, a secret key); several such values come one per line.
    Line,
    /// A JSON document that may span many lines (pasted pretty-printed): all of stdin.
    Document,
}

/// Reads one secret value: from piped stdin in `shape`, or by showing `prompt` on a terminal.
/// Surrounding whitespace (the newline `echo` adds) is removed. `None` when nothing was
/// entered, so the caller can say which value is required. `what` names the value in an I/O
/// error, never the value itself.
pub(crate) fn read_secret(
    source: &mut dyn SecretSource,
    shape: Shape,
    prompt: &str,
    what: &str,
) -> Result<Option<SecretString>, CliError> {
    let raw = if source.is_terminal() {
        source.prompt_hidden(prompt)
    } else {
        match shape {
            Shape::Line => source.read_line().map(Option::unwrap_or_default),
            Shape::Document => source.read_to_end(),
        }
    }
    .map_err(|e| CliError::usage(format!("cannot read the {what}: {e}")))?;
    let value = raw.trim();
    Ok((!value.is_empty()).then(|| SecretString::from(value)))
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::io::{BufRead as _, Cursor, Read as _};

    use secrecy::ExposeSecret as _;

    use super::*;

    /// Piped input when `terminal` is false; scripted prompt answers when it is true.
    struct Scripted {
        terminal: bool,
        input: Cursor<Vec<u8>>,
        answers: VecDeque<String>,
        prompts: Vec<String>,
    }

    impl Scripted {
        fn piped(text: &str) -> Self {
            Self {
                terminal: false,
                input: Cursor::new(text.as_bytes().to_vec()),
                answers: VecDeque::new(),
                prompts: Vec::new(),
            }
        }

        fn terminal(answers: &[&str]) -> Self {
            Self {
                terminal: true,
                input: Cursor::new(Vec::new()),
                answers: answers.iter().map(|a| (*a).to_owned()).collect(),
                prompts: Vec::new(),
            }
        }
    }

    impl SecretSource for Scripted {
        fn is_terminal(&self) -> bool {
            self.terminal
        }
        fn read_line(&mut self) -> io::Result<Option<String>> {
            let mut line = String::new();
            let n = self.input.read_line(&mut line)?;
            Ok((n > 0).then_some(line))
        }
        fn read_to_end(&mut self) -> io::Result<String> {
            let mut all = String::new();
            self.input.read_to_string(&mut all)?;
            Ok(all)
        }
        fn prompt_hidden(&mut self, prompt: &str) -> io::Result<String> {
            self.prompts.push(prompt.to_owned());
            Ok(self.answers.pop_front().unwrap_or_default())
        }
    }

    fn read(source: &mut Scripted, shape: Shape, prompt: &str) -> Option<String> {
        read_secret(source, shape, prompt, "value")
            .expect("reads")
            .map(|s| s.expose_secret().to_owned())
    }

    #[test]
    fn piped_lines_are_read_one_value_per_line_without_line_endings() {
        let mut source = Scripted::piped("AKIAEXAMPLE\r\nsecret-key  \n");
        assert_eq!(
            read(&mut source, Shape::Line, "A: ").as_deref(),
            Some("AKIAEXAMPLE")
        );
        assert_eq!(
            read(&mut source, Shape::Line, "B: ").as_deref(),
            Some("secret-key")
        );
        assert_eq!(read(&mut source, Shape::Line, "C: "), None);
        assert!(source.prompts.is_empty(), "a pipe never prompts");
    }

    #[test]
    fn a_piped_document_is_all_of_stdin_including_inner_newlines() {
        let json = "{\n  \"type\": \"service_account\",\n  \"project_id\": \"p\"\n}\n";
        let mut source = Scripted::piped(json);
        assert_eq!(
            read(&mut source, Shape::Document, "J: ").as_deref(),
            Some(json.trim_end())
        );
    }

    #[test]
    fn empty_piped_input_reads_as_nothing_entered() {
        assert_eq!(read(&mut Scripted::piped(""), Shape::Line, "A: "), None);
        assert_eq!(
            read(&mut Scripted::piped("\n\n"), Shape::Document, "A: "),
            None
        );
    }

    #[test]
    fn a_terminal_prompts_without_echo_with_the_given_prompt() {
        let mut source = Scripted::terminal(&["tok-1", "  "]);
        assert_eq!(
            read(&mut source, Shape::Line, "Provider token: ").as_deref(),
            Some("tok-1")
        );
        assert_eq!(
            read(&mut source, Shape::Document, "Service account key JSON: "),
            None
        );
        assert_eq!(
            source.prompts,
            ["Provider token: ", "Service account key JSON: "]
        );
    }
}
