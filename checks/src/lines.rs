//! A side channel's lines (an audit file, a store's records) as they stood after a call. The
//! runner reads them as the target writes them; a check only asks what they hold.

/// The questions a check asks of a side channel.
pub trait ChannelLines: Sync {
    /// Whether `text` occurs in any line.
    fn contains(&self, text: &str) -> bool;
    /// The lines that hold `nonce` ([`holds`]), in the channel's order.
    fn holding(&self, nonce: &str) -> Vec<String>;
    /// Every line `keep` accepts, in order: for records matched by what they say (a tool name
    /// and a time) rather than by a nonce they hold.
    fn matching(&self, keep: &dyn Fn(&str) -> bool) -> Vec<String>;
}

/// Lines read whole.
impl ChannelLines for Vec<String> {
    fn contains(&self, text: &str) -> bool {
        self.iter().any(|line| line.contains(text))
    }

    fn holding(&self, nonce: &str) -> Vec<String> {
        self.iter()
            .filter(|line| holds(line, nonce))
            .cloned()
            .collect()
    }

    fn matching(&self, keep: &dyn Fn(&str) -> bool) -> Vec<String> {
        self.iter().filter(|line| keep(line)).cloned().collect()
    }
}

/// Whether `line` holds `nonce`. A runner nonce is held only whole: `rc-7-1` is not in a line
/// that holds only `rc-7-10`, or a check could pass on another call's record. Any other text
/// is held anywhere in the line.
pub fn holds(line: &str, nonce: &str) -> bool {
    if runner_nonce(nonce) {
        runner_nonces(line).any(|held| held == nonce)
    } else {
        line.contains(nonce)
    }
}

/// Whether `text` is a nonce as the runner makes them: `rc-<digits>-<digits>`.
pub fn runner_nonce(text: &str) -> bool {
    runner_nonces(text)
        .next()
        .is_some_and(|n| n.len() == text.len())
}

/// Each `rc-<digits>-<digits>` in `line`, its digits taken as far as they go.
pub fn runner_nonces(line: &str) -> impl Iterator<Item = &str> {
    line.match_indices("rc-").filter_map(move |(start, _)| {
        let bytes = line.as_bytes();
        let digits = |from: usize| {
            bytes[from..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count()
        };
        let pid = digits(start + 3);
        let dash = start + 3 + pid;
        if pid == 0 || bytes.get(dash) != Some(&b'-') {
            return None;
        }
        let count = digits(dash + 1);
        (count > 0).then(|| &line[start..dash + 1 + count])
    })
}
