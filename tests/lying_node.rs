//! A node that lies about its answers' size: the client decodes at most what the node said its
//! messages are, and never more than any node may be set to send, however much arrives.

use std::convert::Infallible;
use std::task::{Context, Poll};
use std::time::Duration;

use accelhost_node::client::{Client, ClientOptions, Endpoint};
use accelhost_node::proto::{self, session_event};
use bytes::{BufMut, Bytes, BytesMut};
use hyper::body::Frame;
use prost::Message;
use tokio::net::UnixListener;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::body::Body;
use tonic::codegen::{BoxFuture, http};

use crate::support::ShortScratch;

/// A gRPC message frame: the uncompressed flag, the length, the message.
fn grpc_frame(message: &impl Message) -> Bytes {
    let mut frame = BytesMut::with_capacity(5 + message.encoded_len());
    frame.put_u8(0);
    frame.put_u32(message.encoded_len() as u32);
    message.encode(&mut frame).unwrap();
    frame.freeze()
}

fn grpc_ok() -> http::HeaderMap {
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    trailers
}

/// A fake node: `Attach` announces `announced` bytes per message and keeps the session open;
/// `Describe` answers a device whose name is `answer_bytes` long.
#[derive(Clone)]
struct LyingNode {
    announced: u64,
    answer_bytes: usize,
}

impl tonic::server::NamedService for LyingNode {
    const NAME: &'static str = "accelhost.node.v1.Node";
}

impl tower::Service<http::Request<Body>> for LyingNode {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let path = request.uri().path().to_owned();
        let node = self.clone();
        Box::pin(async move {
            let frames: Vec<Frame<Bytes>> = match path.rsplit('/').next() {
                Some("Attach") => vec![Frame::data(grpc_frame(&proto::SessionEvent {
                    event: Some(session_event::Event::Attached(proto::Attached {
                        session: "s1".into(),
                        client: "tester".into(),
                        node: "liar".into(),
                        max_message_bytes: node.announced,
                    })),
                }))],
                Some("Describe") => vec![
                    Frame::data(grpc_frame(&proto::Device {
                        id: "dfl/emu:dfl0".into(),
                        name: "x".repeat(node.answer_bytes),
                        ..Default::default()
                    })),
                    Frame::trailers(grpc_ok()),
                ],
                _ => vec![Frame::trailers(grpc_ok())],
            };
            // The session stream stays open after its first message, as a node's does.
            let open_ended = path.ends_with("/Attach");
            let frames = tokio_stream::iter(frames.into_iter().map(Ok::<_, Infallible>));
            let body = if open_ended {
                Body::new(http_body_util::StreamBody::new(
                    frames.chain(tokio_stream::pending()),
                ))
            } else {
                Body::new(http_body_util::StreamBody::new(frames))
            };
            Ok(http::Response::builder()
                .header("content-type", "application/grpc")
                .body(body)
                .unwrap())
        })
    }
}

/// What a client of a node announcing `announced` bytes hears when the node answers a
/// `Describe` of `answer_bytes`.
async fn describe_from_liar(announced: u64, answer_bytes: usize) -> Result<usize, String> {
    let dir = ShortScratch::new("liar");
    let socket = dir.0.join("node.sock");
    let incoming = UnixListenerStream::new(UnixListener::bind(&socket).unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(LyingNode {
                announced,
                answer_bytes,
            })
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stopped.await;
            }),
    );
    let options = ClientOptions {
        call_timeout: Duration::from_secs(20),
        ..ClientOptions::default()
    };
    let client = Client::connect(&Endpoint::Unix(socket), options)
        .await
        .unwrap();
    let heard = client
        .describe("dfl/emu:dfl0")
        .await
        .map(|device| device.name.len())
        .map_err(|err| err.to_string());
    drop(client);
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(10), served).await;
    heard
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_decodes_no_answer_larger_than_its_node_announced() {
    // Within what it announced: heard in full.
    assert_eq!(
        describe_from_liar(256 << 10, 100 << 10).await,
        Ok(100 << 10)
    );
    // Past it: refused by its size, not decoded.
    let refused = describe_from_liar(64 << 10, 1 << 20).await.unwrap_err();
    assert!(refused.contains("Describe"), "{refused}");
    assert!(refused.contains("too large"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_announcing_no_bound_is_held_to_the_largest_any_node_may_send() {
    let refused = describe_from_liar(u64::MAX, 65 << 20).await.unwrap_err();
    assert!(refused.contains("too large"), "{refused}");
    assert!(refused.contains(&(64u64 << 20).to_string()), "{refused}");
}
