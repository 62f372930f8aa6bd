//! `/metrics` over HTTP/1, for scrapers nobody authenticates. A scraper's connection has
//! [`REQUEST_DEADLINE`] to send each request's head (and that long idle between requests),
//! and lives at most [`CONNECTION_DEADLINE`], after which it is closed once the answer in
//! flight is sent (or [`CLOSING_GRACE`] later, whatever it does). At most
//! [`METRICS_CONNECTIONS`] are open at once; when they are, a new connection takes the place
//! of one that is not being answered (from its request to the last byte of its answer):
//! first of those never answered, then of the peer with the most connections, oldest first.
//! A scraper that sends its request at once is answered before slow ones can take its place,
//! and keeps its connection between scrapes, however many connections from its own address
//! stay half-sent.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Notify, watch};

use crate::gate::PeerKey;
use crate::metrics::{NodeMetrics, OPENMETRICS_CONTENT_TYPE, PROMETHEUS_CONTENT_TYPE};

/// The most connections `/metrics` serves at once, from anyone: a scraper needs one or two,
/// and what is left of the node's descriptors belongs to its clients.
pub const METRICS_CONNECTIONS: usize = 8;

/// How long a scraper has to send a request's head, and how long a connection may stay idle
/// between requests.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);

/// How long a scraper's connection lives at most; it is then closed once the answer in
/// flight is sent.
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(30);

/// How long a connection being closed (at its deadline, or when the node stops) may take to
/// send the answer in flight before it is cut.
pub const CLOSING_GRACE: Duration = Duration::from_secs(5);

/// What one connection is doing, as the place it holds sees it.
#[derive(Default)]
struct Activity {
    /// Set from a request's arrival until the last byte of its answer is handed on.
    answering: AtomicBool,
    /// Set once one of its requests arrived whole: a scraper, not a half-sent connection.
    answered_once: AtomicBool,
}

/// One open connection's place.
struct Place {
    peer: PeerKey,
    activity: Arc<Activity>,
    /// Told when a newer connection takes its place.
    evicted: Arc<Notify>,
}

/// The connections `/metrics` serves, by number (the smallest is the oldest).
#[derive(Default)]
struct Places {
    open: BTreeMap<u64, Place>,
    next: u64,
}

impl Places {
    /// A place for a connection from `peer`, freeing one if every place is taken (see the
    /// module's documentation); `None` when every connection is being answered.
    fn take(&mut self, peer: PeerKey) -> Option<(u64, Arc<Activity>, Arc<Notify>)> {
        if self.open.len() >= METRICS_CONNECTIONS {
            let mut per_peer: HashMap<&PeerKey, usize> = HashMap::new();
            for place in self.open.values() {
                *per_peer.entry(&place.peer).or_default() += 1;
            }
            let victim = self
                .open
                .iter()
                .filter(|(_, place)| !place.activity.answering.load(Ordering::Acquire))
                .max_by_key(|(id, place)| {
                    (
                        !place.activity.answered_once.load(Ordering::Acquire),
                        per_peer[&place.peer],
                        std::cmp::Reverse(**id),
                    )
                })
                .map(|(id, _)| *id)?;
            if let Some(evicted) = self.open.remove(&victim) {
                evicted.evicted.notify_one();
            }
        }
        let id = self.next;
        self.next += 1;
        let (activity, evicted) = (Arc::new(Activity::default()), Arc::new(Notify::new()));
        self.open.insert(
            id,
            Place {
                peer,
                activity: activity.clone(),
                evicted: evicted.clone(),
            },
        );
        Some((id, activity, evicted))
    }
}

/// Who a scraper's connection comes from.
pub trait ScraperPeer {
    /// Its peer, for sharing the places fairly.
    fn scraper(&self) -> PeerKey;
}

impl ScraperPeer for tokio::net::TcpStream {
    fn scraper(&self) -> PeerKey {
        crate::gate::tcp_peer(self)
    }
}

impl ScraperPeer for tokio::net::UnixStream {
    fn scraper(&self) -> PeerKey {
        crate::gate::unix_credentials(self).map_or(PeerKey::Unknown, |(uid, _)| PeerKey::Uid(uid))
    }
}

/// Serves `/metrics` of `node` on `listener` until `stopped` says stop; then the open
/// connections finish their answers (for at most [`CLOSING_GRACE`]).
pub async fn serve<L>(listener: L, node: Arc<NodeMetrics>, mut stopped: watch::Receiver<bool>)
where
    L: axum::serve::Listener,
    L::Io: ScraperPeer + AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let places = Arc::new(Mutex::new(Places::default()));
    let mut listener = listener;
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (io, _) = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.wait_for(|stop| *stop) => break,
        };
        while connections.try_join_next().is_some() {}
        let taken = places
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take(io.scraper());
        let Some((id, activity, evicted)) = taken else {
            tracing::debug!("closing a /metrics connection: every place is being answered");
            continue;
        };
        let (node, places, stopped) = (node.clone(), places.clone(), stopped.clone());
        connections.spawn(async move {
            serve_connection(io, node, activity, evicted, stopped).await;
            places
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .open
                .remove(&id);
        });
    }
    // The connections close themselves within the grace time once told the node stops.
    let _ = tokio::time::timeout(CLOSING_GRACE * 2, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
}

/// One scraper's connection, to its end, its deadline, its eviction or the node's stop.
async fn serve_connection<IO>(
    io: IO,
    node: Arc<NodeMetrics>,
    activity: Arc<Activity>,
    evicted: Arc<Notify>,
    mut stopped: watch::Receiver<bool>,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        activity.answering.store(true, Ordering::Release);
        activity.answered_once.store(true, Ordering::Release);
        let answer = answer(&node, &request).map(|body| AnswerBody {
            body,
            activity: activity.clone(),
        });
        std::future::ready(Ok::<_, Infallible>(answer))
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(REQUEST_DEADLINE)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(io), service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        () = evicted.notified() => return,
        () = tokio::time::sleep(CONNECTION_DEADLINE) => {}
        _ = stopped.wait_for(|stop| *stop) => {}
    }
    connection.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(CLOSING_GRACE, connection).await;
}

/// The answer to one request: the metrics for `GET /metrics` (OpenMetrics for a scraper that
/// asks for it, as Prometheus does, else the Prometheus text format that `curl` and
/// `promtool check metrics` read), else not found.
fn answer(node: &NodeMetrics, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    if request.uri().path() != "/metrics" {
        return status(StatusCode::NOT_FOUND);
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return status(StatusCode::METHOD_NOT_ALLOWED);
    }
    let openmetrics = request
        .headers()
        .get_all(ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.contains("application/openmetrics-text"));
    let (content_type, body) = if openmetrics {
        (OPENMETRICS_CONTENT_TYPE, node.render())
    } else {
        (PROMETHEUS_CONTENT_TYPE, node.render_prometheus_text())
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// An answer's body that marks its connection answered (no longer being answered) once
/// hyper has taken its last byte or dropped it.
struct AnswerBody {
    body: Full<Bytes>,
    activity: Arc<Activity>,
}

impl Body for AnswerBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for AnswerBody {
    fn drop(&mut self) {
        self.activity.answering.store(false, Ordering::Release);
    }
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = code;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_connection_takes_an_idle_place_of_the_busiest_peer_oldest_first() {
        let mut places = Places::default();
        let (one, two) = (PeerKey::Uid(1), PeerKey::Uid(2));
        let mut taken = Vec::new();
        for i in 0..METRICS_CONNECTIONS {
            let peer = if i < 2 { one.clone() } else { two.clone() };
            taken.push(places.take(peer).unwrap());
        }
        // Peer two holds the most: its oldest (number 2) goes first.
        let newcomer = places.take(one.clone()).unwrap();
        assert!(!places.open.contains_key(&2));
        assert!(places.open.contains_key(&newcomer.0));
        // Connections being answered keep their places.
        for (_, activity, _) in &taken[3..] {
            activity.answering.store(true, Ordering::Release);
        }
        places.take(two.clone()).unwrap();
        assert!(
            !places.open.contains_key(&0),
            "with peer two's answering, the oldest idle one (peer one's) goes"
        );
        for place in places.open.values() {
            place.activity.answering.store(true, Ordering::Release);
        }
        assert!(places.take(one).is_none(), "every place is being answered");
    }

    #[test]
    fn a_connection_once_answered_keeps_its_place_while_half_sent_ones_hold_others() {
        let mut places = Places::default();
        let peer = PeerKey::Uid(1);
        let (scraper, activity, _) = places.take(peer.clone()).unwrap();
        activity.answered_once.store(true, Ordering::Release);
        for _ in 1..METRICS_CONNECTIONS {
            places.take(peer.clone()).unwrap();
        }
        // Half-sent connections from the scraper's own peer come and go; the oldest place,
        // the scraper's, idle between its scrapes, stays.
        for _ in 0..10 * METRICS_CONNECTIONS {
            places.take(peer.clone()).unwrap();
            assert!(places.open.contains_key(&scraper));
            assert_eq!(places.open.len(), METRICS_CONNECTIONS);
        }
        // Once every place has answered, the oldest goes again.
        for place in places.open.values() {
            place.activity.answered_once.store(true, Ordering::Release);
        }
        places.take(peer).unwrap();
        assert!(!places.open.contains_key(&scraper));
    }

    #[test]
    fn a_connection_is_being_answered_until_its_answer_body_is_done() {
        use http_body_util::BodyExt;
        let activity = Arc::new(Activity::default());
        activity.answering.store(true, Ordering::Release);
        let body = AnswerBody {
            body: Full::new(Bytes::from_static(b"accelhost_up 1\n")),
            activity: activity.clone(),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut body = Box::pin(body);
        let frame = runtime.block_on(body.as_mut().frame()).unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), "accelhost_up 1\n");
        assert!(
            activity.answering.load(Ordering::Acquire),
            "hyper still holds the body: the answer is still going out"
        );
        assert!(body.is_end_stream());
        drop(body);
        assert!(!activity.answering.load(Ordering::Acquire));
    }
}
