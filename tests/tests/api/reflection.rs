//! Server reflection in both versions on the public listener. Python's grpcio-reflection,
//! Evans and older grpcurl builds speak only `grpc.reflection.v1alpha`; grpcurl and grpcui
//! speak v1. A client discovers the API with v1alpha alone, then calls a method it found.
use prost::Message as _;
use prost_types::FileDescriptorProto;
use tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1alpha::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1alpha::server_reflection_response::MessageResponse;
use tonic_reflection::pb::v1alpha::{ServerReflectionRequest, ServerReflectionResponse};

use crate::harness::{Bearer, TestApp};

/// One reflection request over a v1alpha stream, as the admin; its answer.
async fn ask(app: &TestApp, request: MessageRequest) -> MessageResponse {
    let mut client =
        ServerReflectionClient::with_interceptor(app.channel().await, Bearer(app.token.clone()));
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(request),
    };
    let mut answers = client
        .server_reflection_info(futures::stream::iter([request]))
        .await
        .expect("v1alpha reflection is served")
        .into_inner();
    let ServerReflectionResponse {
        message_response, ..
    } = answers.message().await.expect("stream").expect("an answer");
    message_response.expect("a response")
}

#[tokio::test]
async fn a_v1alpha_client_lists_the_services_and_calls_a_method_it_found() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;

    let MessageResponse::ListServicesResponse(list) =
        ask(&app, MessageRequest::ListServices(String::new())).await
    else {
        panic!("not a service list");
    };
    let services: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    for expected in [
        "levelrail.provisioner.v1.ProvisionerService",
        "levelrail.nodes.v1.NodesService",
        "levelrail.credentials.v1.CredentialsService",
    ] {
        assert!(
            services.iter().any(|s| s == expected),
            "{expected} in {services:?}"
        );
    }

    // The file declaring the provisioner service, and in it the method to call.
    let MessageResponse::FileDescriptorResponse(files) = ask(
        &app,
        MessageRequest::FileContainingSymbol("levelrail.provisioner.v1.ProvisionerService".into()),
    )
    .await
    else {
        panic!("not a file descriptor");
    };
    let (package, service) = files
        .file_descriptor_proto
        .iter()
        .map(|bytes| FileDescriptorProto::decode(bytes.as_slice()).expect("a descriptor"))
        .find_map(|file| {
            let package = file.package().to_owned();
            file.service
                .into_iter()
                .find(|s| s.name() == "ProvisionerService")
                .map(|s| (package, s))
        })
        .expect("the service is described");
    let method = service
        .method
        .iter()
        .find(|m| m.name() == "ListProvisions")
        .expect("ListProvisions is described");
    assert_eq!(
        method.input_type(),
        ".levelrail.provisioner.v1.ListProvisionsRequest"
    );

    // Call it by the path reflection gave: /<package>.<service>/<method>.
    let path = format!("/{package}.{}/{}", service.name(), method.name());
    let mut grpc = tonic::client::Grpc::new(tonic::service::interceptor::InterceptedService::new(
        app.channel().await,
        Bearer(app.token.clone()),
    ));
    grpc.ready().await.expect("ready");
    let answer: tonic::Response<levelrail_proto::provisioner::v1::ListProvisionsResponse> = grpc
        .unary(
            tonic::Request::new(levelrail_proto::provisioner::v1::ListProvisionsRequest::default()),
            path.parse().expect("a path"),
            tonic_prost::ProstCodec::default(),
        )
        .await
        .expect("the method answers");
    assert!(answer.into_inner().provisions.is_empty());
    app.stop().await;
}
