//! Server-sent events framing: each event's `data:` lines joined by newlines, with its
//! `event:` name. Streamable HTTP answers a POST with such a body; the legacy HTTP+SSE
//! transport keeps one stream open for every answer. One decoder reads both, whole or as the
//! bytes arrive.

/// One event: its name (`message` when the stream names none) and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The event's `event:` name; `message` when the stream gave none.
    pub name: String,
    /// The event's `data:` lines, joined by newlines.
    pub data: Vec<u8>,
}

/// Reads events from bytes as they arrive. A line or an event longer than the bound is the
/// stream's fault, never a reason to hold more of it.
#[derive(Debug)]
pub struct Decoder {
    line: Vec<u8>,
    name: Option<String>,
    data: Option<Vec<u8>>,
    max_bytes: usize,
}

impl Decoder {
    /// A decoder that refuses a line or an event longer than `max_bytes`.
    pub fn new(max_bytes: usize) -> Decoder {
        Decoder {
            line: Vec::new(),
            name: None,
            data: None,
            max_bytes,
        }
    }

    /// The events `bytes` complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Event>, String> {
        let mut events = Vec::new();
        let mut rest = bytes;
        while let Some(at) = rest.iter().position(|b| *b == b'\n') {
            self.extend_line(&rest[..at])?;
            rest = &rest[at + 1..];
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if let Some(event) = self.field(&line)? {
                events.push(event);
            }
        }
        self.extend_line(rest)?;
        Ok(events)
    }

    /// The event a stream that ended without its blank line still completed, if any.
    pub fn finish(mut self) -> Option<Event> {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            let _ = self.field(&line);
        }
        self.dispatch()
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), String> {
        if self.line.len() + bytes.len() > self.max_bytes {
            return Err(format!(
                "an event stream line longer than {} bytes",
                self.max_bytes
            ));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// Takes one whole line: a blank one ends the event.
    fn field(&mut self, line: &[u8]) -> Result<Option<Event>, String> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line.starts_with(b":") {
            return Ok(None);
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                let data = self.data.get_or_insert_with(Vec::new);
                if data.len() + value.len() + 1 > self.max_bytes {
                    return Err(format!("an event longer than {} bytes", self.max_bytes));
                }
                if !data.is_empty() {
                    data.push(b'\n');
                }
                data.extend_from_slice(value);
            }
            b"event" => self.name = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<Event> {
        let name = self.name.take();
        let data = self.data.take()?;
        Some(Event {
            name: name.unwrap_or_else(|| "message".to_string()),
            data,
        })
    }
}

/// Splits a whole SSE body into the data of each event. Events with no data (the priming event
/// some servers send) are skipped.
pub fn events(body: &[u8]) -> Vec<Vec<u8>> {
    let mut decoder = Decoder::new(usize::MAX);
    let mut all = decoder.push(body).unwrap_or_default();
    all.extend(decoder.finish());
    all.into_iter()
        .map(|event| event.data)
        .filter(|data| !data.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{Decoder, events};

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

    #[test]
    fn events_split_anywhere_across_chunks_read_the_same() {
        let stream = b"event: endpoint\r\ndata: /messages?sessionId=abc\r\n\r\nevent: message\ndata: {\"id\":1}\n\ndata: {\"id\":2}\n\n";
        for cut in 0..stream.len() {
            let mut decoder = Decoder::new(1024);
            let mut got = decoder.push(&stream[..cut]).unwrap();
            got.extend(decoder.push(&stream[cut..]).unwrap());
            let named: Vec<(String, String)> = got
                .into_iter()
                .map(|e| (e.name, String::from_utf8(e.data).unwrap()))
                .collect();
            assert_eq!(
                named,
                [
                    ("endpoint".into(), "/messages?sessionId=abc".into()),
                    ("message".into(), "{\"id\":1}".into()),
                    ("message".into(), "{\"id\":2}".into()),
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn an_event_past_the_bound_is_an_error_not_a_buffer() {
        let mut decoder = Decoder::new(16);
        assert!(decoder.push(b"data: 0123456789abcdef0123\n").is_err());
        let mut decoder = Decoder::new(16);
        assert!(decoder.push(&[b'x'; 17]).is_err());
    }
}
