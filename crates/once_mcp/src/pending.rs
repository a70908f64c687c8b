//! The requests the MCP server's reader has queued and the worker has not answered yet,
//! by id: what `notifications/cancelled` can name, and whose replies it suppresses.

use std::collections::HashMap;

use serde_json::Value;

/// The requests between the reader and the worker's reply, keyed by the id's JSON text.
/// Entries exist only while a request is queued or running, so the map is as small as
/// the queue, whatever ids and cancellations the client sends.
#[derive(Default)]
pub(crate) struct PendingRequests {
    by_id: HashMap<String, PendingRequest>,
}

#[derive(Default)]
struct PendingRequest {
    /// Requests with this id not yet answered (a client may reuse an id).
    count: usize,
    /// The client cancelled this id while it was pending: its reply is suppressed.
    cancelled: bool,
}

impl PendingRequests {
    /// The reader queued a request with `id`.
    pub(crate) fn begin(&mut self, id: &Value) {
        self.by_id.entry(id.to_string()).or_default().count += 1;
    }

    /// `notifications/cancelled` for `id`: marks it if pending; returns whether it was.
    pub(crate) fn cancel(&mut self, id: &Value) -> bool {
        match self.by_id.get_mut(&id.to_string()) {
            Some(pending) => {
                pending.cancelled = true;
                true
            }
            None => false,
        }
    }

    pub(crate) fn is_cancelled(&self, id: &Value) -> bool {
        self.by_id
            .get(&id.to_string())
            .is_some_and(|pending| pending.cancelled)
    }

    /// The worker is done with one request with `id`: returns whether it was cancelled.
    pub(crate) fn finish(&mut self, id: &Value) -> bool {
        let key = id.to_string();
        let Some(pending) = self.by_id.get_mut(&key) else {
            return false;
        };
        let cancelled = pending.cancelled;
        pending.count = pending.count.saturating_sub(1);
        if pending.count == 0 {
            self.by_id.remove(&key);
        }
        cancelled
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_pending_requests_can_be_cancelled_and_nothing_outlives_its_request() {
        let mut pending = PendingRequests::default();
        // Cancellations of ids never sent (or sent later) leave nothing behind.
        for i in 0..50 {
            assert!(!pending.cancel(&json!(format!("{i}-{}", "x".repeat(1000)))));
        }
        assert!(pending.by_id.is_empty());
        assert!(!pending.cancel(&json!(7)));
        pending.begin(&json!(7));
        assert!(
            !pending.is_cancelled(&json!(7)),
            "an earlier cancel is forgotten"
        );
        assert!(!pending.finish(&json!(7)), "so the request is answered");
        assert!(pending.by_id.is_empty());

        // A cancellation of a queued request suppresses its reply, then is forgotten.
        pending.begin(&json!("a"));
        assert!(pending.cancel(&json!("a")));
        assert!(pending.is_cancelled(&json!("a")));
        assert!(pending.finish(&json!("a")));
        assert!(pending.by_id.is_empty());
        assert!(
            !pending.cancel(&json!("a")),
            "a finished request is unknown"
        );

        // A reused id stays pending until its last request is answered.
        pending.begin(&json!(1));
        pending.begin(&json!(1));
        assert!(!pending.finish(&json!(1)));
        assert!(pending.cancel(&json!(1)));
        assert!(pending.finish(&json!(1)));
        assert!(pending.by_id.is_empty());
    }
}
