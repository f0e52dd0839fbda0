//! REST/JSON at the product documentation's paths (`POST /api/v1/nodes/provision`,
//! `GET /api/v1/node-provisions/{id}`, …), transcoded onto the gRPC API in-process: each
//! route names one RPC, its request message is built from the path, the query and the JSON
//! body, and the call goes through the same guarded gRPC router as a gRPC client's (token,
//! scope, audit, budgets, concurrency limit, the service's own validation). There is no
//! second implementation of any call.
//!
//! JSON is the proto3 JSON mapping of the messages: fields are emitted with their proto
//! names (`snake_case`) and accepted with either those or their `lowerCamelCase` JSON
//! names; enums are their value names (`PROVIDER_HETZNER`); 64-bit integers are strings;
//! timestamps RFC 3339. A path or query parameter naming an enum also takes the value's
//! short name (`hetzner`). The OpenAPI 3.1 document at [`OPENAPI_PATH`] is generated from
//! the same route table and the same descriptors.
mod call;
mod events;
pub mod openapi;

use std::sync::Arc;

use axum::extract::{RawPathParams, Request};
use axum::response::IntoResponse;
use axum::routing::{MethodFilter, on};
use http::Method;
use prost_reflect::{DescriptorPool, MethodDescriptor};

use crate::listener::{CallGuard, Limit};

/// Where the OpenAPI document is served (without authentication: it describes the API and
/// holds nothing of any caller's).
pub const OPENAPI_PATH: &str = "/api/v1/openapi.json";

/// One REST route: the HTTP method and path, and the RPC it calls.
#[derive(Debug, Clone)]
pub struct Route {
    pub method: Method,
    /// The path, parameters in braces; each names a field of the request message.
    pub path: &'static str,
    /// The RPC: `package.Service/Method`.
    pub rpc: &'static str,
    /// The request message's other fields come from a JSON body (else from the query).
    pub body: bool,
    /// Success is `201 Created` (else `200 OK`).
    pub created: bool,
    pub summary: &'static str,
}

const fn route(
    method: Method,
    path: &'static str,
    rpc: &'static str,
    body: bool,
    created: bool,
    summary: &'static str,
) -> Route {
    Route {
        method,
        path,
        rpc,
        body,
        created,
        summary,
    }
}

const PROVISIONER: &str = "levelrail.provisioner.v1.ProvisionerService";

/// Every REST route.
pub const ROUTES: &[Route] = &[
    route(
        Method::POST,
        "/api/v1/nodes/provision",
        "levelrail.provisioner.v1.ProvisionerService/Provision",
        true,
        true,
        "Start provisioning a node (returns at once, status `creating`)",
    ),
    route(
        Method::GET,
        "/api/v1/node-provisions",
        "levelrail.provisioner.v1.ProvisionerService/ListProvisions",
        false,
        false,
        "List provisions, newest first, paged",
    ),
    route(
        Method::GET,
        "/api/v1/node-provisions/{id}",
        "levelrail.provisioner.v1.ProvisionerService/GetProvision",
        false,
        false,
        "One provision",
    ),
    route(
        Method::POST,
        "/api/v1/node-provisions/{id}/cancel",
        "levelrail.provisioner.v1.ProvisionerService/CancelProvision",
        true,
        false,
        "Cancel an in-flight provision (its server and resources are deleted)",
    ),
    route(
        Method::POST,
        "/api/v1/node-provisions/{id}/retry",
        "levelrail.provisioner.v1.ProvisionerService/RetryProvision",
        true,
        true,
        "Start a new provision with a failed one's settings (returns at once, status \
         `creating`)",
    ),
    route(
        Method::GET,
        "/api/v1/node-provisions/{id}/events",
        "levelrail.provisioner.v1.ProvisionerService/WatchProvision",
        false,
        false,
        "The provision's states as Server-Sent Events: the current state, then each \
         change, until `ready` or `failed`. Each event's id is the provision's \
         `generation`: reconnect with `Last-Event-ID` to receive only later states",
    ),
    route(
        Method::POST,
        "/api/v1/nodes/join-tokens",
        "levelrail.nodes.v1.NodesService/CreateJoinToken",
        true,
        true,
        "Mint a single-use join token (the secret is shown once)",
    ),
    route(
        Method::GET,
        "/api/v1/nodes",
        "levelrail.nodes.v1.NodesService/ListNodes",
        false,
        false,
        "List enrolled nodes, paged",
    ),
    route(
        Method::GET,
        "/api/v1/nodes/{id}",
        "levelrail.nodes.v1.NodesService/GetNode",
        false,
        false,
        "One node",
    ),
    route(
        Method::DELETE,
        "/api/v1/nodes/{id}",
        "levelrail.nodes.v1.NodesService/DeleteNode",
        false,
        false,
        "Delete a node; with `destroy_server=true` also its server at the provider",
    ),
    route(
        Method::GET,
        "/api/v1/providers",
        "levelrail.credentials.v1.CredentialsService/ListProviders",
        false,
        false,
        "The provider cards: which clouds have a credential, and its last verification",
    ),
    route(
        Method::PUT,
        "/api/v1/providers/{provider}/credential",
        "levelrail.credentials.v1.CredentialsService/SetCredential",
        true,
        false,
        "Store the provider's credential (write-only: it is never returned)",
    ),
    route(
        Method::DELETE,
        "/api/v1/providers/{provider}/credential",
        "levelrail.credentials.v1.CredentialsService/DeleteCredential",
        false,
        false,
        "Delete the provider's credential",
    ),
    route(
        Method::POST,
        "/api/v1/providers/{provider}/verify",
        "levelrail.credentials.v1.CredentialsService/VerifyCredential",
        true,
        false,
        "Verify the stored credential against the provider",
    ),
    route(
        Method::GET,
        "/api/v1/providers/{provider}/regions",
        "levelrail.provisioner.v1.ProvisionerService/ListRegions",
        false,
        false,
        "Regions where the provider can create servers",
    ),
    route(
        Method::GET,
        "/api/v1/providers/{provider}/sizes",
        "levelrail.provisioner.v1.ProvisionerService/ListSizes",
        false,
        false,
        "Sizes in a region (`region` in the query), with prices where published",
    ),
];

pub use levelrail_rest_json::descriptors;

/// The RPC a route calls.
pub(crate) fn method(pool: &DescriptorPool, route: &Route) -> Option<MethodDescriptor> {
    let (service, method) = route.rpc.split_once('/')?;
    pool.get_service_by_name(service)?
        .methods()
        .find(|m| m.name() == method)
}

/// What the REST routes share: the guarded gRPC router they call, and the guard and limit
/// that admit a call (permit, token, budget, scope) before any body is read.
#[derive(Clone)]
pub(crate) struct Rest {
    pub(crate) grpc: axum::Router,
    pub(crate) guard: Arc<CallGuard>,
    pub(crate) limit: Limit,
}

/// The REST routes of the services `grpc` serves (a route whose service is not there, the
/// credentials API on a provisioner-only listener, answers 404 like any unknown path), and
/// the OpenAPI document of those served.
pub(crate) fn router(rest: Rest, served: &[&str]) -> axum::Router {
    let pool = descriptors();
    let rest = Arc::new(rest);
    let mut router = axum::Router::new();
    let mut documented = Vec::new();
    for route in ROUTES {
        let service = route.rpc.split_once('/').map_or("", |(s, _)| s);
        if !served.contains(&service) {
            continue;
        }
        let Some(method) = method(&pool, route) else {
            continue;
        };
        documented.push(route.clone());
        let filter = MethodFilter::try_from(route.method.clone())
            .expect("the route table's methods are GET, POST, PUT and DELETE");
        let rest = Arc::clone(&rest);
        router = router.route(
            route.path,
            on(filter, move |params: RawPathParams, req: Request| {
                let rest = Arc::clone(&rest);
                let method = method.clone();
                async move {
                    let answer = if method.is_server_streaming() {
                        events::open(&rest, route, &method, &params, req).await
                    } else {
                        call::call(&rest, route, &method, &params, req).await
                    };
                    answer.unwrap_or_else(IntoResponse::into_response)
                }
            }),
        );
    }
    let document = Arc::new(openapi::document(&pool, &documented).to_string());
    router.route(
        OPENAPI_PATH,
        axum::routing::get(move || {
            let document = Arc::clone(&document);
            async move {
                (
                    [(http::header::CONTENT_TYPE, "application/json")],
                    document.as_str().to_owned(),
                )
                    .into_response()
            }
        }),
    )
}

/// The services of [`ROUTES`] that are the provisioner's (always served).
pub const PROVISIONER_SERVICES: &[&str] = &[PROVISIONER, "levelrail.nodes.v1.NodesService"];

/// The credentials service, served where the credentials API is.
pub const CREDENTIALS_SERVICE: &str = "levelrail.credentials.v1.CredentialsService";
