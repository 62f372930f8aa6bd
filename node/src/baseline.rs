//! The `Baseline` service: the same gRPC stack and transport as the node, doing no work, so
//! that `accelhost bench` can say what the node's calls cost beyond gRPC itself.

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::proto::{self, baseline_server};

/// Answers every call at once, without a session.
#[derive(Clone, Copy, Debug, Default)]
pub struct BaselineService;

#[tonic::async_trait]
impl baseline_server::Baseline for BaselineService {
    async fn noop(&self, _: Request<proto::Empty>) -> Result<Response<proto::Empty>, Status> {
        Ok(Response::new(proto::Empty {}))
    }

    async fn sink(
        &self,
        request: Request<Streaming<proto::Data>>,
    ) -> Result<Response<proto::Empty>, Status> {
        let mut chunks = request.into_inner();
        while chunks.message().await?.is_some() {}
        Ok(Response::new(proto::Empty {}))
    }

    type SourceStream = ReceiverStream<Result<proto::Data, Status>>;

    async fn source(
        &self,
        request: Request<proto::SourceRequest>,
    ) -> Result<Response<Self::SourceStream>, Status> {
        let proto::SourceRequest {
            length,
            chunk_bytes,
        } = request.into_inner();
        let chunk = chunk_bytes.clamp(1, 64 << 20);
        let (sender, receiver) = mpsc::channel(2);
        tokio::spawn(async move {
            let mut sent = 0;
            while sent < length {
                let len = chunk.min(length - sent);
                let data = vec![0u8; len as usize].into();
                if sender.send(Ok(proto::Data { data })).await.is_err() {
                    return;
                }
                sent += len;
            }
        });
        Ok(Response::new(ReceiverStream::new(receiver)))
    }
}
