//! HTML to readable text, tables kept as markdown tables.
//!
//! A flattened table is an unlabelled run of numbers; a markdown table keeps each value next
//! to its column header, which is the meaning. This is a small single-pass converter rather
//! than html2text: html2text 0.17 draws box-drawing borders with a rule between every row
//! (tokens with no information) and converts at a few MB/s, which would dominate the budget
//! for large pages. Malformed markup degrades to text, never to an error.

/// Result of a conversion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HtmlText {
    pub text: String,
    /// Table rows (`<tr>`) rendered, header rows included.
    pub table_rows: usize,
}

/// Heuristic used for `text` blocks (resources declare `text/html` instead). Deliberately
/// strict: mangling a text that merely mentions `<b>` would be worse than leaving HTML as is.
pub fn looks_like_html(s: &str) -> bool {
    let t = s.trim_start();
    if !t.starts_with('<') {
        return false;
    }
    let mut end = t.len().min(64);
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    let head = t[..end].to_ascii_lowercase();
    const OPENERS: &[&str] = &[
        "<!doctype html",
        "<html",
        "<head",
        "<body",
        "<div",
        "<table",
        "<p>",
        "<p ",
        "<section",
        "<article",
        "<ul",
        "<ol",
        "<h1",
        "<h2",
        "<h3",
        "<h4",
        "<h5",
        "<h6",
        "<span",
        "<main",
        "<!--",
    ];
    OPENERS.iter().any(|o| head.starts_with(o)) && t.contains("</")
}

/// Counts `<tr>` start tags, for "kept R of T rows" when only a prefix is converted.
pub fn count_rows(html: &str) -> usize {
    let b = html.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while let Some(p) = memchr(b'<', &b[i..]) {
        let at = i + p;
        if b.len() >= at + 4
            && b[at + 1].eq_ignore_ascii_case(&b't')
            && b[at + 2].eq_ignore_ascii_case(&b'r')
            && (b[at + 3] == b'>' || b[at + 3].is_ascii_whitespace())
        {
            n += 1;
        }
        i = at + 1;
    }
    n
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|b| *b == needle)
}

/// Converts HTML to markdown-flavoured text.
pub fn to_text(html: &str) -> HtmlText {
    let mut c = Conv::default();
    c.run(html);
    while !c.tables.is_empty() {
        c.close_table();
    }
    HtmlText {
        text: tidy(&c.out),
        table_rows: c.rows,
    }
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    row: Option<Vec<String>>,
    cell: Option<String>,
    in_thead: bool,
}

impl Table {
    fn finish_cell(&mut self) {
        if let Some(mut cell) = self.cell.take() {
            // Trimmed in place rather than copied: one allocation less per cell.
            cell.truncate(cell.trim_end().len());
            let start = cell.len() - cell.trim_start().len();
            cell.drain(..start);
            self.row.get_or_insert_with(Vec::new).push(cell);
        }
    }

    fn finish_row(&mut self) {
        self.finish_cell();
        if let Some(row) = self.row.take() {
            self.rows.push(row);
        }
    }
}

#[derive(Default)]
struct Conv {
    out: String,
    tables: Vec<Table>,
    pre: usize,
    lists: Vec<Option<usize>>,
    links: Vec<Option<String>>,
    rows: usize,
}

impl Conv {
    fn run(&mut self, html: &str) {
        let b = html.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let Some(p) = memchr(b'<', &b[i..]) else {
                self.text(&html[i..]);
                break;
            };
            let lt = i + p;
            if lt > i {
                self.text(&html[i..lt]);
            }
            i = self.tag(html, lt);
        }
    }

    /// Handles the markup starting at `lt` (a `<`) and returns where text resumes.
    fn tag(&mut self, html: &str, lt: usize) -> usize {
        let b = html.as_bytes();
        let next = b.get(lt + 1).copied().unwrap_or(0);
        if html[lt..].starts_with("<!--") {
            return find(b, lt + 4, b"-->").map_or(b.len(), |p| p + 3);
        }
        if next == b'!' || next == b'?' {
            return memchr(b'>', &b[lt..]).map_or(b.len(), |p| lt + p + 1);
        }
        let closing = next == b'/';
        let name_start = if closing { lt + 2 } else { lt + 1 };
        let mut name_end = name_start;
        while name_end < b.len() && b[name_end].is_ascii_alphanumeric() {
            name_end += 1;
        }
        if name_end == name_start || !b[name_start].is_ascii_alphabetic() {
            self.text("<");
            return lt + 1;
        }
        let end = tag_end(b, name_end);
        let attrs_end = if end > name_end && b[end - 1] == b'>' {
            end - 1
        } else {
            end
        };
        let attrs = &html[name_end..attrs_end];
        // Lowercased on the stack: a page has a tag every few bytes, and an allocation for
        // each name was a good part of converting a small page. Names are ASCII here.
        let mut buf = [0u8; 16];
        let raw = &html[name_start..name_end];
        let owned;
        let name: &str = if raw.len() <= buf.len() {
            let lower = &mut buf[..raw.len()];
            lower.copy_from_slice(raw.as_bytes());
            lower.make_ascii_lowercase();
            std::str::from_utf8(lower).unwrap_or_default()
        } else {
            owned = raw.to_ascii_lowercase();
            &owned
        };
        if closing {
            self.close(name);
        } else if matches!(
            name,
            "script" | "style" | "noscript" | "template" | "head" | "svg" | "iframe" | "object"
        ) {
            let close = format!("</{name}");
            return find_ci(b, end, close.as_bytes()).map_or(b.len(), |p| {
                memchr(b'>', &b[p..]).map_or(b.len(), |q| p + q + 1)
            });
        } else {
            self.open(name, attrs);
        }
        end
    }

    fn open(&mut self, name: &str, attrs: &str) {
        match name {
            "br" => {
                if self.in_cell() {
                    self.push_raw(" ");
                } else {
                    self.newline_raw();
                }
            }
            "p" | "blockquote" | "figure" | "form" | "dl" | "address" | "fieldset" => self.para(),
            "div" | "section" | "article" | "header" | "footer" | "main" | "nav" | "aside"
            | "details" | "summary" | "dt" | "dd" | "caption" => self.block(),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.para();
                let n = usize::from(name.as_bytes()[1] - b'0');
                if !self.in_cell() {
                    self.push_raw(&"#".repeat(n));
                    self.push_raw(" ");
                }
            }
            "ul" => {
                self.lists.push(None);
                self.block();
            }
            "ol" => {
                self.lists.push(Some(0));
                self.block();
            }
            "li" => {
                self.block();
                if !self.in_cell() {
                    let depth = self.lists.len().max(1);
                    let indent = "  ".repeat(depth - 1);
                    let bullet = match self.lists.last_mut() {
                        Some(Some(n)) => {
                            *n += 1;
                            format!("{indent}{n}. ")
                        }
                        _ => format!("{indent}- "),
                    };
                    self.push_raw(&bullet);
                }
            }
            "hr" => {
                self.para();
                self.push_raw("---");
                self.para();
            }
            "pre" => {
                self.para();
                self.pre += 1;
            }
            "a" => {
                let href = attr(attrs, "href").filter(|h| {
                    let js = h
                        .as_bytes()
                        .get(..11)
                        .is_some_and(|p| p.eq_ignore_ascii_case(b"javascript:"));
                    !h.is_empty() && !h.starts_with('#') && !js
                });
                if href.is_some() {
                    self.push_raw("[");
                }
                self.links.push(href);
            }
            "img" => {
                if let Some(alt) = attr(attrs, "alt").filter(|a| !a.trim().is_empty()) {
                    self.push_raw(&format!("[image: {}]", alt.trim()));
                }
            }
            "table" => {
                if !self.in_cell() {
                    self.para();
                }
                self.tables.push(Table::default());
            }
            "thead" => {
                if let Some(t) = self.tables.last_mut() {
                    t.in_thead = true;
                }
            }
            "tr" => {
                if let Some(t) = self.tables.last_mut() {
                    t.finish_row();
                    t.row = Some(Vec::new());
                }
            }
            "td" | "th" => {
                if let Some(t) = self.tables.last_mut() {
                    t.finish_cell();
                    t.cell = Some(String::new());
                }
            }
            _ => {}
        }
    }

    fn close(&mut self, name: &str) {
        match name {
            "p" | "blockquote" | "figure" | "form" | "dl" | "address" | "fieldset" => self.para(),
            "div" | "section" | "article" | "header" | "footer" | "main" | "nav" | "aside"
            | "details" | "summary" | "dt" | "dd" | "li" | "caption" => self.block(),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => self.para(),
            "ul" | "ol" => {
                self.lists.pop();
                self.block();
            }
            "pre" => {
                self.pre = self.pre.saturating_sub(1);
                self.para();
            }
            "a" => {
                if let Some(Some(href)) = self.links.pop() {
                    self.push_raw("](");
                    self.push_raw(&href);
                    self.push_raw(")");
                }
            }
            "thead" => {
                if let Some(t) = self.tables.last_mut() {
                    t.in_thead = false;
                }
            }
            "td" | "th" => {
                if let Some(t) = self.tables.last_mut() {
                    t.finish_cell();
                }
            }
            "tr" => {
                if let Some(t) = self.tables.last_mut() {
                    t.finish_row();
                }
            }
            "table" if !self.tables.is_empty() => self.close_table(),
            _ => {}
        }
    }

    fn close_table(&mut self) {
        let Some(mut t) = self.tables.pop() else {
            return;
        };
        t.finish_row();
        self.rows += t.rows.len();
        if self.in_cell() {
            // A table inside a cell cannot be a markdown table; keep its cells in order.
            let flat = t
                .rows
                .iter()
                .map(|r| r.join(", "))
                .collect::<Vec<_>>()
                .join("; ");
            self.push_raw(&flat);
            return;
        }
        if t.rows.is_empty() {
            return;
        }
        let cols = t.rows.iter().map(Vec::len).max().unwrap_or(1).max(1);
        // Written straight into the output (no cell is open, so `para` only touches it).
        self.para();
        let s = &mut self.out;
        for (i, row) in t.rows.iter().enumerate() {
            s.push('|');
            for c in 0..cols {
                s.push(' ');
                let cell = row.get(c).map_or("", String::as_str);
                if cell.contains('|') {
                    s.push_str(&cell.replace('|', "\\|"));
                } else {
                    s.push_str(cell);
                }
                s.push_str(" |");
            }
            s.push('\n');
            if i == 0 {
                s.push('|');
                for _ in 0..cols {
                    s.push_str(" --- |");
                }
                s.push('\n');
            }
        }
        self.para();
    }

    fn in_cell(&self) -> bool {
        self.tables.last().is_some_and(|t| t.cell.is_some())
    }

    fn sink(&mut self) -> Option<&mut String> {
        match self.tables.last_mut() {
            Some(t) => t.cell.as_mut(),
            None => Some(&mut self.out),
        }
    }

    fn push_raw(&mut self, s: &str) {
        if let Some(sink) = self.sink() {
            sink.push_str(s);
        } else {
            // Markup between cells of a table (stray text, captions): keep it visible.
            self.out.push_str(s);
        }
    }

    fn newline_raw(&mut self) {
        trim_trailing_spaces(&mut self.out);
        self.out.push('\n');
    }

    fn block(&mut self) {
        if self.in_cell() {
            self.push_raw(" ");
            return;
        }
        trim_trailing_spaces(&mut self.out);
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    fn para(&mut self) {
        if self.in_cell() {
            self.push_raw(" ");
            return;
        }
        trim_trailing_spaces(&mut self.out);
        if self.out.is_empty() {
            return;
        }
        while !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
    }

    fn text(&mut self, raw: &str) {
        let pre = self.pre > 0;
        let decoded = decode_entities(raw);
        let in_table_outside_cell = !self.tables.is_empty() && !self.in_cell();
        if in_table_outside_cell && decoded.trim().is_empty() {
            return;
        }
        let sink = match self.tables.last_mut() {
            Some(t) if t.cell.is_some() => t.cell.as_mut().expect("checked"),
            _ => &mut self.out,
        };
        if pre {
            sink.push_str(&decoded);
            return;
        }
        for ch in decoded.chars() {
            if ch.is_whitespace() {
                if !sink.is_empty() && !sink.ends_with([' ', '\n']) {
                    sink.push(' ');
                }
            } else {
                sink.push(ch);
            }
        }
    }
}

fn trim_trailing_spaces(s: &mut String) {
    while s.ends_with(' ') {
        s.pop();
    }
}

fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = 0;
    for line in s.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    while out.ends_with('\n') {
        out.pop();
    }
    out
}

/// End of a tag (index after `>`), honouring quoted attribute values.
fn tag_end(b: &[u8], from: usize) -> usize {
    let mut quote = 0u8;
    let mut i = from;
    while i < b.len() {
        let c = b[i];
        if quote != 0 {
            if c == quote {
                quote = 0;
            }
        } else if c == b'"' || c == b'\'' {
            quote = c;
        } else if c == b'>' {
            return i + 1;
        }
        i += 1;
    }
    b.len()
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if from > hay.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn find_ci(hay: &[u8], from: usize, needle_lower: &[u8]) -> Option<usize> {
    if from > hay.len() {
        return None;
    }
    hay[from..]
        .windows(needle_lower.len())
        .position(|w| w.eq_ignore_ascii_case(needle_lower))
        .map(|p| p + from)
}

/// Value of attribute `name` (lowercase) in a tag's attribute text, entity-decoded.
fn attr(attrs: &str, name: &str) -> Option<String> {
    // Matched case-insensitively in place: ASCII case changes no byte offsets, and a copy of
    // the attributes per tag was a good part of converting a page of links.
    let lb = attrs.as_bytes();
    let nb = name.as_bytes();
    let find = |from: usize| {
        lb.get(from..)?
            .windows(nb.len())
            .position(|w| w.eq_ignore_ascii_case(nb))
            .map(|p| from + p)
    };
    let mut search = 0;
    while let Some(at) = find(search) {
        search = at + name.len();
        let before_ok = at == 0 || lb[at - 1].is_ascii_whitespace();
        let mut j = at + name.len();
        while j < lb.len() && lb[j].is_ascii_whitespace() {
            j += 1;
        }
        if !before_ok || j >= lb.len() || lb[j] != b'=' {
            continue;
        }
        j += 1;
        while j < lb.len() && lb[j].is_ascii_whitespace() {
            j += 1;
        }
        let (start, end) = match lb.get(j) {
            Some(q @ (b'"' | b'\'')) => {
                let s = j + 1;
                let e = lb[s..]
                    .iter()
                    .position(|c| c == q)
                    .map_or(lb.len(), |p| s + p);
                (s, e)
            }
            Some(_) => {
                let e = lb[j..]
                    .iter()
                    .position(|c| c.is_ascii_whitespace() || *c == b'>')
                    .map_or(lb.len(), |p| j + p);
                (j, e)
            }
            None => return None,
        };
        return Some(decode_entities(&attrs[start..end]).into_owned());
    }
    None
}

fn decode_entities(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('&') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find('&') {
        out.push_str(&rest[..p]);
        let tail = &rest[p..];
        let semi = tail.as_bytes().iter().take(12).position(|b| *b == b';');
        let decoded = semi.and_then(|e| entity(&tail[1..e]).map(|c| (c, e)));
        match decoded {
            Some((c, e)) => {
                out.push(c);
                rest = &tail[e + 1..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

fn entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let code = if let Some(hex) = num.strip_prefix(['x', 'X']) {
            u32::from_str_radix(hex, 16).ok()?
        } else {
            num.parse::<u32>().ok()?
        };
        return char::from_u32(code).filter(|c| *c != '\0');
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "euro" => '€',
        "pound" => '£',
        "yen" => '¥',
        "laquo" => '«',
        "raquo" => '»',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "middot" => '·',
        "times" => '×',
        "deg" => '°',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_becomes_markdown_with_header() {
        let h = "<html><body><h1>Sales</h1><p>Q1 &amp; Q2</p><table><thead><tr><th>Region</th><th>Total</th></tr></thead>\
                 <tbody><tr><td>North</td><td>10</td></tr><tr><td>South | East</td><td>20</td></tr></tbody></table></body></html>";
        let t = to_text(h);
        assert!(t.text.contains("# Sales"), "{}", t.text);
        assert!(t.text.contains("Q1 & Q2"));
        assert!(
            t.text.contains(
                "| Region | Total |\n| --- | --- |\n| North | 10 |\n| South \\| East | 20 |"
            ),
            "{}",
            t.text
        );
        assert_eq!(t.table_rows, 3);
        assert_eq!(count_rows(h), 3);
    }

    #[test]
    fn scripts_dropped_links_kept() {
        let t = to_text(
            "<div>See <a href=\"https://x.example/a?b=1&amp;c=2\">docs</a><script>alert('x<y')</script></div>",
        );
        assert_eq!(t.text, "See [docs](https://x.example/a?b=1&c=2)");
    }

    #[test]
    fn detection() {
        assert!(looks_like_html(
            "<!DOCTYPE html><html><body>x</body></html>"
        ));
        assert!(looks_like_html("  <table><tr><td>1</td></tr></table>"));
        assert!(!looks_like_html("use <b> for bold"));
        assert!(!looks_like_html("<3 you"));
    }

    #[test]
    fn garbage_does_not_panic() {
        for s in [
            "<",
            "<a",
            "<a href=",
            "&#xFFFFFFFF;",
            "<table><td>x",
            "</table></tr>",
            "<!--",
            "<script>",
            "é<é>&é;",
        ] {
            let _ = to_text(s);
        }
    }
}
