//! HTML to readable text, tables kept as markdown tables.
//!
//! A flattened table is an unlabelled run of numbers; a markdown table keeps each value next
//! to its column header, which is the meaning. Malformed markup degrades to text, never to an
//! error: a page is read as a run of texts and tags, and each tag changes where text goes
//! (the output, or a cell of an open table) and what separates it from the text before.
//!
//! This is a small converter of its own rather than a crate, because none of the maintained
//! ones keeps every table as a table in the compact form a model reads best: `htmd` turns a
//! table without header cells into paragraphs and pads every column to its widest cell,
//! `html-to-markdown-rs` pads columns too, turns the title into front matter and brings a
//! parser and a dozen crates of its own, `fast_html2md` writes a header rule that is not a
//! markdown rule, `html2md` is GPL and `html2text` draws box borders. All of them were many
//! times slower (reports/benchmarks.md).
//!
//! The `accel` build converts with [`fast`], which gives the same text (a differential test
//! holds the two to each other) with scans made for speed.

use std::borrow::Cow;

#[cfg(feature = "accel")]
mod fast;

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
    #[cfg(feature = "accel")]
    return fast::count_rows(html);
    #[cfg(not(feature = "accel"))]
    count_rows_plain(html)
}

// Under `accel`, the plain path is the reference its differential test holds `fast` to.
#[cfg_attr(feature = "accel", allow(dead_code))]
fn count_rows_plain(html: &str) -> usize {
    html.as_bytes()
        .windows(4)
        .filter(|w| {
            w[0] == b'<'
                && w[1].eq_ignore_ascii_case(&b't')
                && w[2].eq_ignore_ascii_case(&b'r')
                && (w[3] == b'>' || w[3].is_ascii_whitespace())
        })
        .count()
}

/// Converts HTML to markdown-flavoured text.
pub fn to_text(html: &str) -> HtmlText {
    #[cfg(feature = "accel")]
    return fast::to_text(html);
    #[cfg(not(feature = "accel"))]
    convert(html)
}

#[cfg_attr(feature = "accel", allow(dead_code))]
fn convert(html: &str) -> HtmlText {
    let mut c = Converter::default();
    let mut at = 0;
    while at < html.len() {
        let Some(lt) = html[at..].find('<').map(|p| at + p) else {
            c.text(&html[at..]);
            break;
        };
        if lt > at {
            c.text(&html[at..lt]);
        }
        at = c.markup(html, lt);
    }
    // Tables left open at the end (a page cut short) are rendered as they stand.
    while !c.tables.is_empty() {
        c.close_table();
    }
    HtmlText {
        text: tidy(&c.out),
        table_rows: c.rows,
    }
}

/// What the converter does with an element; every other name is `Other`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tag {
    Br,
    /// Paragraph-like: a blank line around.
    Para,
    /// Block-like: a line break around.
    Block,
    Li,
    Heading(usize),
    Ul,
    Ol,
    Hr,
    Pre,
    A,
    Img,
    Table,
    Tr,
    Cell,
    /// Content skipped up to the matching close tag: never text a reader sees.
    Raw,
    Other,
}

impl Tag {
    fn of(name: &str) -> Tag {
        match name.to_ascii_lowercase().as_str() {
            "br" => Tag::Br,
            "p" | "figure" | "form" | "dl" | "address" | "fieldset" | "blockquote" => Tag::Para,
            "div" | "section" | "article" | "header" | "footer" | "main" | "nav" | "aside"
            | "details" | "summary" | "dt" | "dd" | "caption" => Tag::Block,
            "li" => Tag::Li,
            "ul" => Tag::Ul,
            "ol" => Tag::Ol,
            "hr" => Tag::Hr,
            "pre" => Tag::Pre,
            "a" => Tag::A,
            "img" => Tag::Img,
            "table" => Tag::Table,
            "tr" => Tag::Tr,
            "td" | "th" => Tag::Cell,
            "script" | "style" | "noscript" | "template" | "head" | "svg" | "iframe" | "object" => {
                Tag::Raw
            }
            "h1" => Tag::Heading(1),
            "h2" => Tag::Heading(2),
            "h3" => Tag::Heading(3),
            "h4" => Tag::Heading(4),
            "h5" => Tag::Heading(5),
            "h6" => Tag::Heading(6),
            _ => Tag::Other,
        }
    }
}

/// A table being read. It is written out when it closes: only then is its widest row known.
#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    /// The open row, from its `<tr>` (or its first cell) to the next row or the table's end.
    row: Option<Vec<String>>,
    /// The open cell's text.
    cell: Option<String>,
}

impl Table {
    fn finish_cell(&mut self) {
        if let Some(text) = self.cell.take() {
            self.row
                .get_or_insert_with(Vec::new)
                .push(text.trim().to_string());
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
struct Converter {
    out: String,
    /// Open tables, innermost last.
    tables: Vec<Table>,
    /// Open `<pre>` elements: their text is kept as it is.
    pre: usize,
    /// Open lists, innermost last: the last number given in a numbered one.
    lists: Vec<Option<usize>>,
    /// Open links, innermost last, with their target if it is one worth showing.
    links: Vec<Option<String>>,
    rows: usize,
}

impl Converter {
    /// Reads the markup at `lt` (a `<`) and returns where the text after it starts.
    fn markup(&mut self, html: &str, lt: usize) -> usize {
        let rest = &html[lt..];
        if let Some(comment) = rest.strip_prefix("<!--") {
            return comment.find("-->").map_or(html.len(), |p| lt + 4 + p + 3);
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            return rest.find('>').map_or(html.len(), |p| lt + p + 1);
        }
        let closing = rest.starts_with("</");
        let name_at = lt + if closing { 2 } else { 1 };
        let name_len = html[name_at..]
            .bytes()
            .take_while(u8::is_ascii_alphanumeric)
            .count();
        let name = &html[name_at..name_at + name_len];
        if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            // Not a tag (`a < b`, `<3`): the `<` is text.
            self.text("<");
            return lt + 1;
        }
        let end = tag_end(html, name_at + name_len);
        let tag = Tag::of(name);
        if closing {
            self.close(tag);
        } else if tag == Tag::Raw {
            return raw_text_end(html, end, name);
        } else {
            let attrs = &html[name_at + name_len..end];
            self.open(tag, attrs.strip_suffix('>').unwrap_or(attrs));
        }
        end
    }

    fn open(&mut self, tag: Tag, attrs: &str) {
        match tag {
            Tag::Br if self.in_cell() => self.sink().push(' '),
            Tag::Br => {
                trim_trailing_spaces(&mut self.out);
                self.out.push('\n');
            }
            Tag::Para => self.para(),
            Tag::Block => self.block(),
            Tag::Heading(level) => {
                self.para();
                if !self.in_cell() {
                    self.out.push_str(&"#".repeat(level));
                    self.out.push(' ');
                }
            }
            Tag::Ul => {
                self.lists.push(None);
                self.block();
            }
            Tag::Ol => {
                self.lists.push(Some(0));
                self.block();
            }
            Tag::Li => {
                self.block();
                if !self.in_cell() {
                    let indent = "  ".repeat(self.lists.len().max(1) - 1);
                    let bullet = match self.lists.last_mut() {
                        Some(Some(n)) => {
                            *n += 1;
                            format!("{indent}{n}. ")
                        }
                        _ => format!("{indent}- "),
                    };
                    self.out.push_str(&bullet);
                }
            }
            Tag::Hr => {
                self.para();
                self.sink().push_str("---");
                self.para();
            }
            Tag::Pre => {
                self.para();
                self.pre += 1;
            }
            Tag::A => {
                // A link to the page itself or to script shows the model nothing it can use.
                let href = attr(attrs, "href").filter(|h| {
                    let script = h
                        .as_bytes()
                        .get(..11)
                        .is_some_and(|p| p.eq_ignore_ascii_case(b"javascript:"));
                    !h.is_empty() && !h.starts_with('#') && !script
                });
                if href.is_some() {
                    self.sink().push('[');
                }
                self.links.push(href.map(Cow::into_owned));
            }
            Tag::Img => {
                if let Some(alt) = attr(attrs, "alt").filter(|a| !a.trim().is_empty()) {
                    let s = self.sink();
                    s.push_str("[image: ");
                    s.push_str(alt.trim());
                    s.push(']');
                }
            }
            Tag::Table => {
                if !self.in_cell() {
                    self.para();
                }
                self.tables.push(Table::default());
            }
            Tag::Tr => {
                if let Some(t) = self.tables.last_mut() {
                    t.finish_row();
                    t.row = Some(Vec::new());
                }
            }
            Tag::Cell => {
                if let Some(t) = self.tables.last_mut() {
                    t.finish_cell();
                    t.cell = Some(String::new());
                }
            }
            Tag::Raw | Tag::Other => {}
        }
    }

    fn close(&mut self, tag: Tag) {
        match tag {
            Tag::Para | Tag::Heading(_) => self.para(),
            Tag::Block | Tag::Li => self.block(),
            Tag::Ul | Tag::Ol => {
                self.lists.pop();
                self.block();
            }
            Tag::Pre => {
                self.pre = self.pre.saturating_sub(1);
                self.para();
            }
            Tag::A => {
                if let Some(Some(href)) = self.links.pop() {
                    let s = self.sink();
                    s.push_str("](");
                    s.push_str(&href);
                    s.push(')');
                }
            }
            Tag::Cell => {
                if let Some(t) = self.tables.last_mut() {
                    t.finish_cell();
                }
            }
            Tag::Tr => {
                if let Some(t) = self.tables.last_mut() {
                    t.finish_row();
                }
            }
            Tag::Table => self.close_table(),
            _ => {}
        }
    }

    /// Writes the innermost table out: as a markdown table, its first row the header, or,
    /// inside a cell of another table (where a markdown table cannot be), as its cells in
    /// order.
    fn close_table(&mut self) {
        let Some(mut t) = self.tables.pop() else {
            return;
        };
        t.finish_row();
        self.rows += t.rows.len();
        if let Some(cell) = self.tables.last_mut().and_then(|p| p.cell.as_mut()) {
            let rows: Vec<String> = t.rows.iter().map(|row| row.join(", ")).collect();
            cell.push_str(&rows.join("; "));
            return;
        }
        if t.rows.is_empty() {
            return;
        }
        let cols = t.rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
        self.para();
        for (i, row) in t.rows.iter().enumerate() {
            self.out.push('|');
            for c in 0..cols {
                let cell = row.get(c).map_or("", String::as_str);
                self.out.push(' ');
                self.out.push_str(&cell.replace('|', "\\|"));
                self.out.push_str(" |");
            }
            self.out.push('\n');
            if i == 0 {
                self.out.push('|');
                self.out.push_str(&" --- |".repeat(cols));
                self.out.push('\n');
            }
        }
        self.para();
    }

    /// Text between tags, entities decoded: kept as it is inside `<pre>`, elsewhere with each
    /// whitespace run as one space. Blank text between a table's cells is layout, not content.
    fn text(&mut self, raw: &str) {
        let text = decode_entities(raw);
        let between_cells = !self.tables.is_empty() && !self.in_cell();
        if between_cells && text.trim().is_empty() {
            return;
        }
        if self.pre > 0 {
            self.sink().push_str(&text);
        } else {
            push_collapsed(self.sink(), &text);
        }
    }

    fn in_cell(&self) -> bool {
        self.tables.last().is_some_and(|t| t.cell.is_some())
    }

    /// Where text goes: the open cell of the innermost table, else the output (also for text
    /// between the cells of a table: stray text and captions stay visible).
    fn sink(&mut self) -> &mut String {
        match self.tables.last_mut() {
            Some(Table {
                cell: Some(cell), ..
            }) => cell,
            _ => &mut self.out,
        }
    }

    /// A line break before what follows; a space inside a cell, which is one line.
    fn block(&mut self) {
        if self.in_cell() {
            self.sink().push(' ');
            return;
        }
        trim_trailing_spaces(&mut self.out);
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    /// A blank line before what follows; a space inside a cell.
    fn para(&mut self) {
        if self.in_cell() {
            self.sink().push(' ');
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
}

/// Appends `s` to `sink` with each whitespace run as one space, and none at the start of
/// `sink` or after a space or line break already there.
fn push_collapsed(sink: &mut String, s: &str) {
    let mut after_space = sink.is_empty() || sink.ends_with(' ') || sink.ends_with('\n');
    for c in s.chars() {
        if !c.is_whitespace() {
            sink.push(c);
            after_space = false;
        } else if !after_space {
            sink.push(' ');
            after_space = true;
        }
    }
}

fn trim_trailing_spaces(s: &mut String) {
    s.truncate(s.trim_end_matches(' ').len());
}

/// No line ends with whitespace, no blank line comes first, last or after another.
fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = 0;
    for line in s.split('\n') {
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
    out.truncate(out.trim_end_matches('\n').len());
    out
}

/// End of a tag (index after `>`); a `>` inside a quoted attribute value does not end it.
fn tag_end(html: &str, from: usize) -> usize {
    let mut quote = None;
    for (i, c) in html.bytes().enumerate().skip(from) {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'>' => return i + 1,
            None if c == b'"' || c == b'\'' => quote = Some(c),
            None => {}
        }
    }
    html.len()
}

/// Where the text after a raw-text element (`<script>`, `<style>`, ...) opened before `from`
/// starts: after its close tag, matched in any case, or at the end if it has none.
fn raw_text_end(html: &str, from: usize, name: &str) -> usize {
    let close = format!("</{name}");
    let found = html.as_bytes()[from..]
        .windows(close.len())
        .position(|w| w.eq_ignore_ascii_case(close.as_bytes()));
    match found {
        Some(p) => {
            let at = from + p;
            html[at..].find('>').map_or(html.len(), |q| at + q + 1)
        }
        None => html.len(),
    }
}

/// Value of attribute `name` (lowercase) in a tag's attribute text, entity-decoded.
fn attr<'a>(attrs: &'a str, name: &str) -> Option<Cow<'a, str>> {
    let b = attrs.as_bytes();
    let is_name_at = |i: usize| {
        b.get(i..i + name.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(name.as_bytes()))
    };
    let mut search = 0;
    while let Some(at) = (search..b.len()).find(|&i| is_name_at(i)) {
        search = at + name.len();
        if at > 0 && !b[at - 1].is_ascii_whitespace() {
            continue;
        }
        let Some(value) = attrs[search..]
            .trim_start_matches(|c: char| c.is_ascii_whitespace())
            .strip_prefix('=')
        else {
            continue;
        };
        let value = value.trim_start_matches(|c: char| c.is_ascii_whitespace());
        let value = match value.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let quoted = &value[1..];
                &quoted[..quoted.find(q).unwrap_or(quoted.len())]
            }
            Some(_) => {
                let end = value
                    .find(|c: char| c.is_ascii_whitespace() || c == '>')
                    .unwrap_or(value.len());
                &value[..end]
            }
            None => return None,
        };
        return Some(decode_entities(value));
    }
    None
}

/// `s` with its character references (`&amp;`, `&#65;`, `&#x41;`) replaced; an unknown or
/// malformed one is left as it is.
fn decode_entities(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find('&') {
        out.push_str(&rest[..p]);
        let tail = &rest[p..];
        let semi = tail.as_bytes().iter().take(12).position(|b| *b == b';');
        match semi.and_then(|e| entity(&tail[1..e]).map(|c| (c, e))) {
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
    Cow::Owned(out)
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

    /// Uneven rows are filled to the widest; a table in a cell is kept as its cells in
    /// order; a table without header cells is still a table; lists, rules and line breaks.
    #[test]
    fn layout_of_uneven_and_nested_tables_and_lists() {
        for (html, text, rows) in [
            (
                "<table><tr><td>a</td><td>b</td><td>c</td></tr><tr><td>d</td></tr></table>",
                "| a | b | c |\n| --- | --- | --- |\n| d |  |  |",
                2,
            ),
            (
                "<table><tr><td>x<table><tr><td>1</td><td>2</td></tr><tr><td>3</td></tr></table></td><td>y</td></tr></table>",
                "| x1, 2; 3 | y |\n| --- | --- |",
                3,
            ),
            (
                "<ol><li>one<li>two<ul><li>inner</ul></ol><hr>a<br>b",
                "1. one\n2. two\n  - inner\n\n---\n\na\nb",
                0,
            ),
            (
                "<table><tr><td>a<br>b</td></tr></table>caption <b>text</b>",
                "| a b |\n| --- |\n\ncaption text",
                1,
            ),
            (
                "<p>x <img alt=\" chart \"> <a href=\"#top\">top</a> <a href='javascript:go()'>go</a></p>",
                "x [image: chart] top go",
                0,
            ),
        ] {
            let t = to_text(html);
            assert_eq!((t.text.as_str(), t.table_rows), (text, rows), "{html}");
        }
    }

    /// Blank runs collapse to one space, whatever mix of ASCII and Unicode blanks they are;
    /// `<pre>` keeps its text but at most one blank line.
    #[test]
    fn blank_runs_collapse() {
        for (html, text) in [
            ("a\u{a0}b", "a b"),
            ("<p>a\u{3000}\u{3000}b</p>", "a b"),
            ("a \tb", "a b"),
            ("<pre>a\n\n\nb</pre>", "a\n\nb"),
            ("<pre>  a  b</pre>c", "  a  b\n\nc"),
            (
                "<table>\n  <tr>\n                <td>x</td>\n  <td> y  z </td></tr>\n</table>",
                "| x | y z |\n| --- | --- |",
            ),
            ("x                \n y", "x y"),
            ("line        \nnext", "line next"),
            ("line\n\n\n\nnext", "line next"),
            ("a  b  c  d  ", "a b c d"),
            ("<p> \u{2003} a \u{a0}\u{a0} b \t\n</p>", "a b"),
        ] {
            assert_eq!(to_text(html).text, text, "{html:?}");
        }
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

    #[test]
    fn raw_text_close_found_in_any_case() {
        let h = "<p>a</p><SCRIPT>x = '</scrip>' < 1 </sCrIpT ><p>b</p><style>";
        assert_eq!(to_text(h).text, "a\n\nb");
        assert_eq!(to_text("a<!-- x > y -->b<!x>c<?y?>d").text, "abcd");
    }

    #[test]
    fn rows_are_counted_by_their_start_tags() {
        let h = "<tr><TR\t<tR <tr\r<trx<t<tr";
        assert_eq!(count_rows_plain(h), 4);
        assert_eq!(count_rows(h), 4);
    }

    /// The `accel` converter against the plain one, on pages made of the tokens that steer a
    /// conversion (every tag the converter knows, in both cases and with attributes, entities,
    /// blanks of each kind, stray `<`, `>` and quotes, cut tags and comments) and on any text.
    #[cfg(feature = "accel")]
    mod fast_against_plain {
        use proptest::prelude::*;

        const TOKENS: &[&str] = &[
            "<table>",
            "</table>",
            "<TABLE border=1>",
            "<tr>",
            "</tr>",
            "<TR class=\"a>b\">",
            "<td>",
            "</td>",
            "<th>",
            "</th>",
            "<Td colspan='2'>",
            "</tD>",
            "<thead>",
            "</thead>",
            "<tbody>",
            "<p>",
            "</p>",
            "<P class=x>",
            "<br>",
            "<br/>",
            "<div>",
            "</div>",
            "<blockquote>",
            "</blockquote>",
            "<ul>",
            "</ul>",
            "<ol>",
            "</ol>",
            "<li>",
            "</li>",
            "<h1>",
            "</h1>",
            "<h3 id=x>",
            "</h3>",
            "<hr>",
            "<pre>",
            "</pre>",
            "<a href=\"u?a=1&amp;b\">",
            "<a href=#top>",
            "<A HREF='JavaScript:x'>",
            "<a>",
            "</a>",
            "<img alt=\"pic &amp; x\">",
            "<img alt=' '>",
            "<img src=x alt=y>",
            "<script>",
            "</script>",
            "<STYLE>",
            "</style >",
            "<svg/>",
            "<head>",
            "</head>",
            "<!--",
            "-->",
            "<!-- c -->",
            "<!doctype html>",
            "<?x?>",
            "<",
            ">",
            "</",
            "<3",
            "<1a>",
            "</ x>",
            "\"",
            "'",
            "&amp;",
            "&lt;",
            "&#65;",
            "&#x4A;",
            "&#0;",
            "&bogus;",
            "&",
            "&nbsp;",
            ";",
            " ",
            "  ",
            "\n",
            "\t",
            "\r\n",
            "\u{a0}",
            "\u{3000}",
            "\u{2003}",
            "|",
            "x",
            "word",
            "é",
            "中文",
            "a b",
            "<span>",
            "</span>",
            "<customelement>",
            "</customelement>",
            "<abcdefghij>",
        ];

        /// Few enough tokens that tables in cells of tables, uneven rows and cells that
        /// hold a `|` come up often.
        const TABLE_TOKENS: &[&str] = &[
            "<table>",
            "</table>",
            "<tr>",
            "</tr>",
            "<td>",
            "</td>",
            "<th>",
            "x",
            "|",
            " ",
            "\n",
            "<br>",
            "<p>",
            "<li>",
            "<a href=u>",
            "</a>",
            "é",
        ];

        fn page() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => prop::collection::vec(prop::sample::select(TOKENS), 0..60)
                    .prop_map(|t| t.concat()),
                3 => prop::collection::vec(prop::sample::select(TABLE_TOKENS), 0..80)
                    .prop_map(|t| t.concat()),
                1 => "\\PC{0,200}",
                1 => "[<>/a-z &;#\"' \n|]{0,120}",
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4000))]
            #[test]
            fn the_fast_converter_writes_what_the_plain_one_writes(html in page()) {
                prop_assert_eq!(super::super::fast::to_text(&html), super::super::convert(&html));
                prop_assert_eq!(
                    super::super::fast::count_rows(&html),
                    super::super::count_rows_plain(&html)
                );
            }
        }
    }
}
