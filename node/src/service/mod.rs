//! The `Node` gRPC service over one `Host`. Every call passes the authorization layer first
//! (`crate::authorize`: who the caller is, and whether its grants allow the call), then its
//! handler finds the caller's session and makes the host call. The handlers are grouped by
//! concept, one file each; the state they share is below them (`state.rs`), and the table
//! below routes each call of `node.proto` to its handler.

mod buffers;
mod devices;
mod events;
mod mmio;
mod offload;
mod sessions;
mod state;

use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::proto::{self, node_server};
use buffers::DataStream;
pub use devices::device_of;
pub use sessions::SessionStream;
pub use state::{NodeService, Reloaded};

/// What a call needs of the caller's grants, beyond being a client of the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Being a client is enough (what the call touches was reached through a device grant).
    Client,
    /// `grants.reconfigure`: the call loads an image onto a card, changing it for every
    /// other client of the card.
    Reconfigure,
}

/// One call's row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// The RPC's name in `node.proto`.
    pub method: &'static str,
    /// What the caller's grants must allow.
    pub needs: Needs,
    /// What the call charges, and to which grant or limit (for people: `accelhost serve
    /// --help` and the README print this table).
    pub charges: &'static str,
}

/// The node's calls, described once: each call of `node.proto` with its handler
/// (`module::call(node, request)`), what it needs of the caller's grants and what it
/// charges. Makes the service's impl of the generated `Node` trait and the authorization
/// table ([`RULES`]) from the same rows.
macro_rules! routes {
    (
        streams { $($stream:ident = $stream_type:ty;)* }
        calls {
            $(
                $method:literal => $module:ident::$call:ident($request:ty) -> $reply:ty;
                    needs $needs:ident, charges $charges:literal;
            )*
        }
    ) => {
        #[tonic::async_trait]
        impl node_server::Node for NodeService {
            $(type $stream = $stream_type;)*
            $(
                async fn $call(
                    &self,
                    request: Request<$request>,
                ) -> Result<Response<$reply>, Status> {
                    $module::$call(self, request).await
                }
            )*
        }

        /// Every call of `node.proto`, in its order: what each needs of the caller's grants
        /// and what it charges. The authorization layer (`crate::authorize`) checks each
        /// call against its row before the handler runs; `accelhost serve --help` and the
        /// README print it.
        pub const RULES: &[Rule] = &[$(
            Rule { method: $method, needs: Needs::$needs, charges: $charges },
        )*];
    };
}

routes! {
    streams {
        AttachStream = SessionStream;
        BufferReadStream = DataStream;
        SubmitStream = crate::pipeline::Replies;
        WatchEventStream = ReceiverStream<Result<proto::EventState, Status>>;
    }
    calls {
        "Attach" => sessions::attach(proto::AttachRequest) -> SessionStream;
            needs Client, charges "a session (limits.max_sessions)";
        "Enumerate" => devices::enumerate(proto::EnumerateRequest) -> proto::EnumerateReply;
            needs Client, charges "nothing";
        "Describe" => devices::describe(proto::DeviceRequest) -> proto::Device;
            needs Client, charges "nothing";
        "Open" => devices::open(proto::OpenRequest) -> proto::ObjectReply;
            needs Client, charges "an object (limits.max_objects_per_session)";
        "Close" => devices::close(proto::ObjectRequest) -> proto::Empty;
            needs Client, charges "nothing";
        "Reset" => devices::reset(proto::ObjectRequest) -> proto::Empty;
            needs Client, charges "nothing";
        "Reconfigure" => devices::reconfigure(Streaming<proto::ReconfigureChunk>) -> proto::Empty;
            needs Reconfigure, charges "a stream (limits.max_streams_per_session); the image as it arrives (grants.dma_memory_mib)";
        "MapMmio" => mmio::map_mmio(proto::MapMmioRequest) -> proto::MmioRegion;
            needs Client, charges "an object";
        "MmioRead" => mmio::mmio_read(proto::MmioReadRequest) -> proto::Value;
            needs Client, charges "nothing";
        "MmioWrite" => mmio::mmio_write(proto::MmioWriteRequest) -> proto::Empty;
            needs Client, charges "nothing";
        "MmioWriteBatch" => mmio::mmio_write_batch(proto::MmioWriteBatchRequest) -> proto::Empty;
            needs Client, charges "nothing";
        "MmioPoll" => mmio::mmio_poll(proto::PollRequest) -> proto::Value;
            needs Client, charges "nothing";
        "PrepareBuffer" => buffers::prepare_buffer(proto::PrepareBufferRequest) -> proto::Buffer;
            needs Client, charges "an object; its size in whole pages (grants.dma_memory_mib)";
        "BufferWrite" => buffers::buffer_write(Streaming<proto::BufferWriteChunk>) -> proto::Empty;
            needs Client, charges "nothing";
        "BufferRead" => buffers::buffer_read(proto::BufferReadRequest) -> DataStream;
            needs Client, charges "a stream (limits.max_streams_per_session)";
        "BufferFill" => buffers::buffer_fill(proto::BufferFillRequest) -> proto::Empty;
            needs Client, charges "nothing";
        "BufferPoll" => buffers::buffer_poll(proto::PollRequest) -> proto::Value;
            needs Client, charges "nothing";
        "BufferSync" => buffers::buffer_sync(proto::BufferSyncRequest) -> proto::BufferSyncReply;
            needs Client, charges "the node's mirror of the buffer once (grants.dma_memory_mib)";
        "Alloc" => buffers::alloc(proto::AllocRequest) -> proto::MemoryReply;
            needs Client, charges "an object; its size in whole pages (grants.dma_memory_mib)";
        "CreateProgram" => offload::create_program(Streaming<proto::ProgramChunk>) -> proto::ObjectReply;
            needs Reconfigure, charges "an object and a stream; the image as it arrives (grants.dma_memory_mib)";
        "BuiltinProgram" => offload::builtin_program(proto::ObjectRequest) -> proto::ObjectReply;
            needs Client, charges "an object";
        "Kernel" => offload::kernel(proto::KernelRequest) -> proto::ObjectReply;
            needs Client, charges "an object";
        "CreateQueue" => offload::create_queue(proto::ObjectRequest) -> proto::ObjectReply;
            needs Client, charges "an object";
        "EnqueueMemcpy" => offload::enqueue_memcpy(proto::MemcpyRequest) -> proto::ObjectReply;
            needs Client, charges "an object (the event)";
        "EnqueueLaunch" => offload::enqueue_launch(proto::LaunchRequest) -> proto::ObjectReply;
            needs Client, charges "an object (the event)";
        "Submit" => offload::submit(Streaming<proto::SubmitRequest>) -> crate::pipeline::Replies;
            needs Client, charges "a stream (limits.max_streams_per_session); up to 1024 commands in flight";
        "QueueFinish" => offload::queue_finish(proto::ObjectRequest) -> proto::Empty;
            needs Client, charges "nothing";
        "RegisterEvent" => events::register_event(proto::RegisterEventRequest) -> proto::ObjectReply;
            needs Client, charges "an object";
        "EventStatus" => events::event_status(proto::ObjectRequest) -> proto::EventState;
            needs Client, charges "nothing";
        "EventWait" => events::event_wait(proto::EventWaitRequest) -> proto::EventState;
            needs Client, charges "nothing";
        "WatchEvent" => events::watch_event(proto::ObjectRequest) -> ReceiverStream<Result<proto::EventState, Status>>;
            needs Client, charges "a stream (limits.max_streams_per_session)";
        "Release" => sessions::release(proto::ObjectRequest) -> proto::Empty;
            needs Client, charges "gives back what the object held";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RPC names of `node.proto`, read from its text.
    fn proto_methods() -> Vec<String> {
        let proto = include_str!("../../proto/accelhost/node/v1/node.proto");
        proto
            .lines()
            .filter_map(|line| line.trim().strip_prefix("rpc "))
            .map(|rest| rest.split('(').next().unwrap().trim().to_owned())
            .collect()
    }

    #[test]
    fn every_call_of_the_proto_has_one_row_in_its_order() {
        let methods = proto_methods();
        assert!(methods.len() > 20, "{methods:?}");
        let rows: Vec<&str> = RULES.iter().map(|r| r.method).collect();
        assert_eq!(rows, methods);
    }

    #[test]
    fn loading_an_image_needs_the_reconfigure_grant() {
        for method in ["Reconfigure", "CreateProgram"] {
            assert_eq!(
                crate::authorize::rule_of(method).unwrap().needs,
                Needs::Reconfigure
            );
        }
        assert!(crate::authorize::rule_of("Nonexistent").is_none());
    }
}
