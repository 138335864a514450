//! Server-sent events framing, as streamable HTTP uses it: each event's `data:` lines joined
//! by newlines. Events with no data (the priming event some servers send) are skipped.

/// Splits an SSE body into the data of each event.
pub fn events(body: &[u8]) -> Vec<Vec<u8>> {
    let text = String::from_utf8_lossy(body);
    let mut events = Vec::new();
    let mut data: Option<Vec<u8>> = None;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            if let Some(done) = data.take()
                && !done.is_empty()
            {
                events.push(done);
            }
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        if field == "data" {
            let buffer = data.get_or_insert_with(Vec::new);
            if !buffer.is_empty() {
                buffer.push(b'\n');
            }
            buffer.extend_from_slice(value.as_bytes());
        }
    }
    if let Some(done) = data
        && !done.is_empty()
    {
        events.push(done);
    }
    events
}

#[cfg(test)]
mod tests {
    use super::events;

    #[test]
    fn reads_events_skipping_priming_and_comments() {
        let body = b"id: 0\ndata:\n\n: keepalive\ndata: {\"a\":1}\n\ndata: line1\r\ndata: line2\r\n\r\nevent: x\ndata:{\"b\":2}";
        let got: Vec<String> = events(body)
            .into_iter()
            .map(|e| String::from_utf8(e).unwrap())
            .collect();
        assert_eq!(got, ["{\"a\":1}", "line1\nline2", "{\"b\":2}"]);
    }

    #[test]
    fn empty_and_garbage_bodies_yield_nothing() {
        assert!(events(b"").is_empty());
        assert!(events(b"\n\n\n").is_empty());
        assert!(events(b"retry: 10\n\n").is_empty());
    }
}
