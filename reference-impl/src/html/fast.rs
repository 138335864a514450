//! The `accel` build's converter: the same text as the plain one in `super` (a differential
//! test holds the two to each other), with text and tag ends scanned eight bytes at a time,
//! the table tags most pages are made of read as one word, table rows laid out as markdown
//! while they are read and copied out at once when they are even, and the tidy pass skipped
//! when the text is already tidy.

use super::{HtmlText, decode_entities};

/// Counts `<tr>` start tags, for "kept R of T rows" when only a prefix is converted.
pub(super) fn count_rows(html: &str) -> usize {
    // Runs over the whole source, not just the converted prefix, so it is the html cost that
    // grows with the page. Eight positions at a time look for `<tr` (SWAR); stopping at
    // every `<` was slow, as a page has one every few bytes.
    const ONES: u64 = 0x0101_0101_0101_0101;
    const CASE: u64 = 0x2020_2020_2020_2020;
    /// 0x80 in each byte of `w` equal to `k`, 0 in the others (exact, no carries across).
    fn eq(w: u64, k: u8) -> u64 {
        let v = w ^ (ONES * u64::from(k));
        !(((v & (0x7F * ONES)) + 0x7F * ONES) | v | (0x7F * ONES))
    }
    let b = html.as_bytes();
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let tr_at = |at: usize| {
        b.get(at + 3)
            .is_some_and(|c| *c == b'>' || c.is_ascii_whitespace())
    };
    let mut n = 0;
    let mut i = 0;
    while i + 10 <= b.len() {
        let mut m = eq(word(i), b'<') & eq(word(i + 1) | CASE, b't') & eq(word(i + 2) | CASE, b'r');
        while m != 0 {
            let at = i + (m.trailing_zeros() / 8) as usize;
            n += usize::from(tr_at(at));
            m &= m - 1;
        }
        i += 8;
    }
    while i < b.len() {
        if b[i] == b'<'
            && b.len() >= i + 4
            && b[i + 1].eq_ignore_ascii_case(&b't')
            && b[i + 2].eq_ignore_ascii_case(&b'r')
        {
            n += usize::from(tr_at(i));
        }
        i += 1;
    }
    n
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|b| *b == needle)
}

/// `memchr` for what may run long (scripts, styles, comments): eight bytes at a time.
fn memchr_long(needle: u8, hay: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let mut i = 0;
    while let Some(bytes) = hay.get(i..i + 8) {
        let v = u64::from_le_bytes(bytes.try_into().expect("8 bytes")) ^ (ONES * u64::from(needle));
        // The lowest byte flagged is the first zero byte of `v`; flags above it can be
        // false, which does not matter here.
        let zero = v.wrapping_sub(ONES) & !v & (0x80 * ONES);
        if zero != 0 {
            return Some(i + (zero.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    hay[i..].iter().position(|b| *b == needle).map(|p| i + p)
}

/// Converts HTML to markdown-flavoured text.
pub(super) fn to_text(html: &str) -> HtmlText {
    let mut c = Conv::default();
    // The text is about as long as the markup's text plus table borders: sized once, the
    // buffer is not copied at each doubling.
    c.out.reserve(html.len());
    c.run(html);
    while !c.tables.is_empty() {
        c.close_table();
    }
    HtmlText {
        text: tidy_owned(c.out),
        table_rows: c.rows,
    }
}

/// The elements the converter treats differently; every other name is `Other`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tag {
    Br,
    /// Paragraph-like: a blank line around.
    Para,
    /// Block-like: a line break around.
    Block,
    Li,
    Heading(u8),
    Ul,
    Ol,
    Hr,
    Pre,
    A,
    Img,
    Table,
    Thead,
    Tr,
    Cell,
    /// Content skipped up to the matching close tag.
    Raw,
    Other,
}

/// A tag name of at most eight bytes as a number: byte `i` (lowercased) at bits `8i..`.
/// Names are ASCII alphanumeric, and `| 0x20` lowercases letters and keeps digits, so the
/// key is found while the name is scanned, without a lowercase copy.
const fn key(name: &[u8]) -> u64 {
    let mut k = 0;
    let mut i = 0;
    while i < name.len() {
        k |= ((name[i] | 0x20) as u64) << (8 * i);
        i += 1;
    }
    k
}

const K_A: u64 = key(b"a");
const K_TD: u64 = key(b"td");
const K_TH: u64 = key(b"th");
const K_TR: u64 = key(b"tr");
const K_BR: u64 = key(b"br");
const K_P: u64 = key(b"p");
const K_FIGURE: u64 = key(b"figure");
const K_FORM: u64 = key(b"form");
const K_DL: u64 = key(b"dl");
const K_ADDRESS: u64 = key(b"address");
const K_FIELDSET: u64 = key(b"fieldset");
const K_DIV: u64 = key(b"div");
const K_SECTION: u64 = key(b"section");
const K_ARTICLE: u64 = key(b"article");
const K_HEADER: u64 = key(b"header");
const K_FOOTER: u64 = key(b"footer");
const K_MAIN: u64 = key(b"main");
const K_NAV: u64 = key(b"nav");
const K_ASIDE: u64 = key(b"aside");
const K_DETAILS: u64 = key(b"details");
const K_SUMMARY: u64 = key(b"summary");
const K_DT: u64 = key(b"dt");
const K_DD: u64 = key(b"dd");
const K_CAPTION: u64 = key(b"caption");
const K_LI: u64 = key(b"li");
const K_UL: u64 = key(b"ul");
const K_OL: u64 = key(b"ol");
const K_HR: u64 = key(b"hr");
const K_PRE: u64 = key(b"pre");
const K_IMG: u64 = key(b"img");
const K_TABLE: u64 = key(b"table");
const K_THEAD: u64 = key(b"thead");
const K_SCRIPT: u64 = key(b"script");
const K_STYLE: u64 = key(b"style");
const K_NOSCRIPT: u64 = key(b"noscript");
const K_TEMPLATE: u64 = key(b"template");
const K_HEAD: u64 = key(b"head");
const K_SVG: u64 = key(b"svg");
const K_IFRAME: u64 = key(b"iframe");
const K_OBJECT: u64 = key(b"object");
const K_H1: u64 = key(b"h1");
const K_H2: u64 = key(b"h2");
const K_H3: u64 = key(b"h3");
const K_H4: u64 = key(b"h4");
const K_H5: u64 = key(b"h5");
const K_H6: u64 = key(b"h6");

/// End of the ASCII-alphanumeric run at `from` (a tag name) and its key (see `key`). Eight
/// bytes are classified at once (SWAR): the byte loop was the hottest part of reading a tag
/// in a profile of a table page, names being one to a few bytes and then a branch.
fn scan_name(b: &[u8], from: usize) -> (usize, u64) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x80 * ONES;
    const LOW7: u64 = 0x7F * ONES;
    // Per byte x of `w` below 0x80: bit 7 set if x >= lo, resp. x <= hi; no borrows cross.
    let ge = |w: u64, lo: u8| ((w & LOW7) | HIGH).wrapping_sub(ONES * u64::from(lo)) & HIGH;
    let le = |w: u64, hi: u8| (ONES * u64::from(0x80 + hi)).wrapping_sub(w & LOW7) & HIGH;
    if let Some(bytes) = b.get(from..from + 8) {
        let w = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
        let l = w | (0x20 * ONES);
        let alnum = ((ge(l, b'a') & le(l, b'z')) | (ge(w, b'0') & le(w, b'9'))) & !w & HIGH;
        let other = !alnum & HIGH;
        if other != 0 {
            let len = (other.trailing_zeros() / 8) as usize;
            // `len` is at most 7 here.
            return (from + len, l & !(u64::MAX << (8 * len)));
        }
    }
    let mut end = from;
    let mut k = 0u64;
    while let Some(&c) = b.get(end).filter(|c| c.is_ascii_alphanumeric()) {
        if end - from < 8 {
            k |= u64::from(c | 0x20) << (8 * (end - from));
        }
        end += 1;
    }
    (end, k)
}

/// `<tr>`, `<td>`, `<th>`, their close tags and `</a>`, in any case, at `lt`: the class,
/// whether a close tag, and the length. Most tags of a table page are these, without
/// attributes; matched as one word, they skip the name scan, the classification and the
/// search for the tag's end, which were most of the cost of such a tag.
fn bare_row_tag(b: &[u8], lt: usize) -> Option<(Tag, bool, usize)> {
    /// A pattern's bytes as a word, 0x20 where it has a letter, and 0xFF where it has a byte.
    /// `| 0x20` lowercases only where the pattern has a letter, and there it maps just the
    /// two cases of that letter to it.
    const fn pattern(s: &[u8]) -> (u64, u64, u64) {
        let (mut w, mut letters, mut len) = (0, 0, 0);
        let mut i = 0;
        while i < s.len() {
            w |= (s[i] as u64) << (8 * i);
            if s[i].is_ascii_lowercase() {
                letters |= 0x20 << (8 * i);
            }
            len |= 0xFF << (8 * i);
            i += 1;
        }
        (w, letters, len)
    }
    const TD: (u64, u64, u64) = pattern(b"<td>");
    const TH: (u64, u64, u64) = pattern(b"<th>");
    const TR: (u64, u64, u64) = pattern(b"<tr>");
    const TD_END: (u64, u64, u64) = pattern(b"</td>");
    const TH_END: (u64, u64, u64) = pattern(b"</th>");
    const TR_END: (u64, u64, u64) = pattern(b"</tr>");
    const A_END: (u64, u64, u64) = pattern(b"</a>");
    let w = u64::from_le_bytes(*b.get(lt..)?.first_chunk::<8>()?);
    let is = |(p, letters, len): (u64, u64, u64)| (w | letters) & len == p;
    if (w >> 8) as u8 == b'/' {
        if is(TD_END) || is(TH_END) {
            Some((Tag::Cell, true, 5))
        } else if is(TR_END) {
            Some((Tag::Tr, true, 5))
        } else if is(A_END) {
            Some((Tag::A, true, 4))
        } else {
            None
        }
    } else if is(TD) || is(TH) {
        Some((Tag::Cell, false, 4))
    } else if is(TR) {
        Some((Tag::Tr, false, 4))
    } else {
        None
    }
}

/// Classifies a tag name from its key (see `key`) and length; the one known name longer
/// than eight bytes is compared directly.
fn classify(k: u64, raw: &[u8]) -> Tag {
    if raw.len() > 8 {
        return if raw.eq_ignore_ascii_case(b"blockquote") {
            Tag::Para
        } else {
            Tag::Other
        };
    }
    // A table page's most common tags are tested before the search through all keys.
    if k == K_TD {
        return Tag::Cell;
    }
    if k == K_TR {
        return Tag::Tr;
    }
    match k {
        K_A => Tag::A,
        K_TD | K_TH => Tag::Cell,
        K_TR => Tag::Tr,
        K_BR => Tag::Br,
        K_P | K_FIGURE | K_FORM | K_DL | K_ADDRESS | K_FIELDSET => Tag::Para,
        K_DIV | K_SECTION | K_ARTICLE | K_HEADER | K_FOOTER | K_MAIN | K_NAV | K_ASIDE
        | K_DETAILS | K_SUMMARY | K_DT | K_DD | K_CAPTION => Tag::Block,
        K_LI => Tag::Li,
        K_UL => Tag::Ul,
        K_OL => Tag::Ol,
        K_HR => Tag::Hr,
        K_PRE => Tag::Pre,
        K_IMG => Tag::Img,
        K_TABLE => Tag::Table,
        K_THEAD => Tag::Thead,
        K_SCRIPT | K_STYLE | K_NOSCRIPT | K_TEMPLATE | K_HEAD | K_SVG | K_IFRAME | K_OBJECT => {
            Tag::Raw
        }
        K_H1 | K_H2 | K_H3 | K_H4 | K_H5 | K_H6 => Tag::Heading((k >> 8) as u8 - b'0'),
        _ => Tag::Other,
    }
}

/// A table being read. Cell texts share one buffer (cells and rows are ranges) rather than a
/// `String` per cell and a `Vec` per row: allocating and freeing those was a large part of
/// converting a table. The buffer holds them as markdown rows (`| a | b |` and a line
/// break), so that a table whose rows all have as many cells, none with a `|`, is copied
/// out at once: rendering it a cell at a time was a tenth of converting the bench page.
#[derive(Default)]
struct Table {
    buf: String,
    /// Whether a cell text holds a `|`, which the rendering escapes.
    pipe: bool,
    /// Where the first row ends in `buf`, after its line break.
    first_row_end: usize,
    /// Trimmed cell texts, as ranges of `buf`, in document order.
    cells: Vec<(usize, usize)>,
    /// For each finished row, the number of cells up to its end.
    row_ends: Vec<usize>,
    row_open: bool,
    /// Where the open cell's text starts in `buf`.
    cell: Option<usize>,
    in_thead: bool,
}

impl Table {
    /// Where the open row's cells start in `cells`.
    fn row_start(&self) -> usize {
        self.row_ends.last().copied().unwrap_or(0)
    }

    fn open_cell(&mut self) {
        if self.cells.len() != self.row_start() {
            self.buf.push(' ');
        }
        self.buf.push('|');
        self.buf.push(' ');
        self.cell = Some(self.buf.len());
    }

    /// Inlined, the call is skipped where no cell is open (most `<tr>` and `</tr>`).
    #[inline]
    fn finish_cell(&mut self) {
        if let Some(start) = self.cell.take() {
            self.end_cell(start);
        }
    }

    fn end_cell(&mut self, start: usize) {
        // ASCII whitespace trimmed on bytes; where a non-ASCII character is next to the
        // trimmed text (it may be whitespace), by `trim_end` and `trim_start`.
        let b = self.buf.as_bytes();
        let ws = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r');
        let mut end = b.len();
        while end > start && ws(b[end - 1]) {
            end -= 1;
        }
        let mut from = start;
        while from < end && ws(b[from]) {
            from += 1;
        }
        let lead = if end == from || (b[end - 1].is_ascii() && b[from].is_ascii()) {
            self.buf.truncate(end);
            from - start
        } else {
            end = start + trim_end(&self.buf[start..]).len();
            self.buf.truncate(end);
            end - start - trim_start(&self.buf[start..]).len()
        };
        if lead > 0 {
            self.buf.replace_range(start..start + lead, "");
        }
        self.pipe |= has_pipe_at_end(self.buf.as_bytes(), start);
        self.cells.push((start, end - lead));
        self.row_open = true;
    }

    fn finish_row(&mut self) {
        self.finish_cell();
        if self.row_open {
            self.row_open = false;
            if self.cells.len() > self.row_start() {
                self.buf.push(' ');
                self.buf.push('|');
                self.buf.push('\n');
            }
            self.row_ends.push(self.cells.len());
            if self.row_ends.len() == 1 {
                self.first_row_end = self.buf.len();
            }
        }
    }

    fn rows(&self) -> impl Iterator<Item = &[(usize, usize)]> {
        let mut from = 0;
        self.row_ends.iter().map(move |&to| {
            let row = &self.cells[from..to];
            from = to;
            row
        })
    }

    fn text(&self, (start, end): (usize, usize)) -> &str {
        &self.buf[start..end]
    }
}

#[derive(Default)]
struct Conv<'a> {
    out: String,
    tables: Vec<Table>,
    /// The last table closed, whose buffers the next table reuses: a page of many small
    /// tables would otherwise allocate (and size from the input left) three buffers each.
    /// One rather than a stack of them, as a `Vec` was another allocation per page.
    spare: Option<Table>,
    pre: usize,
    lists: Vec<Option<usize>>,
    links: Vec<Option<std::borrow::Cow<'a, str>>>,
    rows: usize,
}

impl<'a> Conv<'a> {
    fn run(&mut self, html: &'a str) {
        let b = html.as_bytes();
        let mut i = 0;
        while i < b.len() {
            // A tag often follows a tag; texts are searched eight bytes at a time.
            let p = if b[i] == b'<' {
                Some(0)
            } else {
                memchr_long(b'<', &b[i..])
            };
            let Some(p) = p else {
                self.text(&html[i..], &b[i..]);
                break;
            };
            let lt = i + p;
            if lt > i {
                self.text(&html[i..lt], &b[i..]);
            }
            i = self.tag(html, lt);
        }
    }

    /// Handles the markup starting at `lt` (a `<`) and returns where text resumes.
    fn tag(&mut self, html: &'a str, lt: usize) -> usize {
        let b = html.as_bytes();
        if let Some((tag, closing, len)) = bare_row_tag(b, lt) {
            let end = lt + len;
            if closing {
                self.close(tag);
            } else {
                self.open(tag, html, end - 1, end);
            }
            return end;
        }
        let next = b.get(lt + 1).copied().unwrap_or(0);
        if next == b'!' && b[lt..].starts_with(b"<!--") {
            return find(b, lt + 4, b"-->").map_or(b.len(), |p| p + 3);
        }
        if next == b'!' || next == b'?' {
            return memchr(b'>', &b[lt..]).map_or(b.len(), |p| lt + p + 1);
        }
        let closing = next == b'/';
        let name_start = if closing { lt + 2 } else { lt + 1 };
        let (name_end, k) = scan_name(b, name_start);
        // The key's first byte is the name's first, lowercased if a letter (0 if no name):
        // a letter is at least `a`, a digit below it.
        if (k as u8) < b'a' {
            self.text("<", b"<");
            return lt + 1;
        }
        let end = tag_end(b, name_end);
        let raw = &b[name_start..name_end];
        let tag = classify(k, raw);
        if closing {
            self.close(tag);
        } else if tag == Tag::Raw {
            // `</name`, matched in any case; raw-text names are at most 8 bytes.
            let mut close = [0u8; 10];
            close[..2].copy_from_slice(b"</");
            close[2..2 + raw.len()].copy_from_slice(raw);
            return find_ci(b, end, &close[..2 + raw.len()]).map_or(b.len(), |p| {
                memchr(b'>', &b[p..]).map_or(b.len(), |q| p + q + 1)
            });
        } else {
            self.open(tag, html, name_end, end);
        }
        end
    }

    /// `html[name_end..end]` is the rest of the tag, its attributes and the `>` if any: cut out
    /// only for the tags that read attributes, as the slice checks were a cost per tag.
    fn open(&mut self, tag: Tag, html: &'a str, name_end: usize, end: usize) {
        let attrs = || {
            let b = html.as_bytes();
            let attrs_end = if end > name_end && b[end - 1] == b'>' {
                end - 1
            } else {
                end
            };
            &html[name_end..attrs_end]
        };
        match tag {
            Tag::Br => {
                if self.in_cell() {
                    self.push_raw(" ");
                } else {
                    self.newline_raw();
                }
            }
            Tag::Para => self.para(),
            Tag::Block => self.block(),
            Tag::Heading(n) => {
                self.para();
                if !self.in_cell() {
                    self.push_raw(&"#".repeat(usize::from(n)));
                    self.push_raw(" ");
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
            Tag::Hr => {
                self.para();
                self.push_raw("---");
                self.para();
            }
            Tag::Pre => {
                self.para();
                self.pre += 1;
            }
            Tag::A => {
                let href = attr(attrs(), "href").filter(|h| {
                    let js = h
                        .as_bytes()
                        .get(..11)
                        .is_some_and(|p| p.eq_ignore_ascii_case(b"javascript:"));
                    !h.is_empty() && !h.starts_with('#') && !js
                });
                if href.is_some() {
                    self.raw_sink().push('[');
                }
                self.links.push(href);
            }
            Tag::Img => {
                if let Some(alt) = attr(attrs(), "alt").filter(|a| !a.trim().is_empty()) {
                    self.push_raw("[image: ");
                    self.push_raw(alt.trim());
                    self.push_raw("]");
                }
            }
            Tag::Table => {
                if !self.in_cell() {
                    self.para();
                }
                // Sized for a small table, since growing each from empty showed in the
                // bench's profile. An outermost table is sized from the input left (cell text
                // is at most about half of a table's markup, a cell at least about 20 bytes
                // of it, a row 60), so a growing table is not reallocated again and again.
                // Nested tables stay small, so that deep nesting cannot reserve the input's
                // size per level.
                let t = if let Some(mut t) = self.spare.take() {
                    t.buf.clear();
                    t.cells.clear();
                    t.row_ends.clear();
                    Table {
                        buf: t.buf,
                        cells: t.cells,
                        row_ends: t.row_ends,
                        ..Table::default()
                    }
                } else {
                    let rest = html.len() - end;
                    let (buf, cells, rows) = if self.tables.is_empty() {
                        (rest / 2, rest / 20, rest / 60)
                    } else {
                        (0, 0, 0)
                    };
                    Table {
                        buf: String::with_capacity(buf.max(256)),
                        cells: Vec::with_capacity(cells.max(16)),
                        row_ends: Vec::with_capacity(rows.max(8)),
                        ..Table::default()
                    }
                };
                self.tables.push(t);
            }
            Tag::Thead => {
                if let Some(t) = self.tables.last_mut() {
                    t.in_thead = true;
                }
            }
            Tag::Tr => {
                if let Some(t) = self.tables.last_mut() {
                    t.finish_row();
                    t.row_open = true;
                }
            }
            Tag::Cell => {
                if let Some(t) = self.tables.last_mut() {
                    t.finish_cell();
                    t.open_cell();
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
                    let s = self.raw_sink();
                    s.push(']');
                    s.push('(');
                    s.push_str(&href);
                    s.push(')');
                }
            }
            Tag::Thead => {
                if let Some(t) = self.tables.last_mut() {
                    t.in_thead = false;
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
            Tag::Table if !self.tables.is_empty() => self.close_table(),
            _ => {}
        }
    }

    fn close_table(&mut self) {
        let Some(mut t) = self.tables.pop() else {
            return;
        };
        self.render_table(&mut t);
        self.spare = Some(t);
    }

    /// Writes a table closed (popped from `tables`) to its parent cell or the output.
    fn render_table(&mut self, t: &mut Table) {
        t.finish_row();
        self.rows += t.row_ends.len();
        if let Some(parent) = self.tables.last_mut().filter(|p| p.cell.is_some()) {
            // A table inside a cell cannot be a markdown table; keep its cells in order.
            let s = &mut parent.buf;
            for (r, row) in t.rows().enumerate() {
                if r > 0 {
                    s.push_str("; ");
                }
                for (c, &cell) in row.iter().enumerate() {
                    if c > 0 {
                        s.push_str(", ");
                    }
                    s.push_str(t.text(cell));
                }
            }
            return;
        }
        if t.row_ends.is_empty() {
            return;
        }
        let cols = t.rows().map(<[_]>::len).max().unwrap_or(1).max(1);
        // Written straight into the output (no cell is open, so `para` only touches it).
        self.para();
        let s = &mut self.out;
        if !t.pipe && t.rows().all(|row| row.len() == cols) {
            // `buf` is the rendering but for the rule under the first row.
            s.push_str(&t.buf[..t.first_row_end]);
            s.push('|');
            for _ in 0..cols {
                s.push_str(" --- |");
            }
            s.push('\n');
            s.push_str(&t.buf[t.first_row_end..]);
            self.para();
            return;
        }
        for (i, row) in t.rows().enumerate() {
            s.push('|');
            for c in 0..cols {
                s.push(' ');
                let cell = row.get(c).map_or("", |&cell| t.text(cell));
                if has_byte(cell, b'|') {
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

    /// The open cell's buffer, or the output (also for markup between cells of a table:
    /// stray text and captions stay visible).
    fn push_raw(&mut self, s: &str) {
        self.raw_sink().push_str(s);
    }

    /// Where `push_raw` writes. Characters are pushed to it one by one where there are one
    /// or two: a `push_str` is a `memcpy` call.
    fn raw_sink(&mut self) -> &mut String {
        match self.tables.last_mut() {
            Some(t) if t.cell.is_some() => &mut t.buf,
            _ => &mut self.out,
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

    /// `raw` is a prefix of `hay`, which `push_collapsed` may read ahead in.
    fn text(&mut self, raw: &str, hay: &[u8]) {
        let pre = self.pre > 0;
        let in_table_outside_cell = !self.tables.is_empty() && !self.in_cell();
        if !pre && !in_table_outside_cell {
            // Most texts have no entity: collapsed straight from the source, and done again
            // from the decoded text if a `&` turns up.
            let (sink, start) = self.text_sink();
            let mark = sink.len();
            if push_collapsed(sink, start, raw, hay, true) {
                return;
            }
            sink.truncate(mark);
        }
        let decoded = decode_entities(raw);
        if in_table_outside_cell && decoded.trim().is_empty() {
            return;
        }
        let (sink, start) = self.text_sink();
        if pre {
            sink.push_str(&decoded);
        } else {
            push_collapsed(sink, start, &decoded, decoded.as_bytes(), false);
        }
    }

    /// Where text goes, and where the open cell's text starts in it (0 for the output).
    fn text_sink(&mut self) -> (&mut String, usize) {
        match self.tables.last_mut() {
            Some(Table {
                buf,
                cell: Some(start),
                ..
            }) => (buf, *start),
            _ => (&mut self.out, 0),
        }
    }
}

/// Appends `s` to the text in `sink[start..]` with each whitespace run (Unicode whitespace)
/// as one space, and none at its start or after a space or line break already there. Copies
/// runs of other characters at once rather than a character at a time. With `stop_at_amp`,
/// returns false at the first `&`, part of `s` appended. `hay` starts with `s`: what follows
/// lets the scan read eight bytes at a time up to the end of `s`.
// Inlined into `Conv::text`, its only caller: a text run is a few bytes, and the call's
// register saves and restores were a good part of one.
#[inline(always)]
fn push_collapsed(sink: &mut String, start: usize, s: &str, hay: &[u8], stop_at_amp: bool) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x80 * ONES;
    const LOW7: u64 = 0x7F * ONES;
    // A NUL is flagged anyway, so stands for no `&`.
    let amp = ONES * u64::from(if stop_at_amp { b'&' } else { 0 });
    let mut skip = sink.len() == start || matches!(sink.as_bytes().last(), Some(b' ' | b'\n'));
    let b = s.as_bytes();
    let mut run = 0;
    // Just after a space kept in the run (a single space after other characters is copied
    // with them, rather than ending the run).
    let mut spaced = usize::MAX;
    let mut i = 0;
    while i < b.len() {
        // Printable ASCII other than space (and `&` with `stop_at_amp`) is neither whitespace
        // nor the start of a character: skipped eight bytes at a time where `hay` has them.
        if let Some(bytes) = hay.get(i..i + 8) {
            let w = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
            let low = w & LOW7;
            let v = w ^ amp;
            let special = (w
                | !(low + (0x80 - 0x21) * ONES)
                | (low + ONES)
                | !(((v & LOW7) + LOW7) | v | LOW7))
                & HIGH;
            if special == 0 {
                i += 8;
                continue;
            }
            i += (special.trailing_zeros() / 8) as usize;
            if i >= b.len() {
                break;
            }
        } else {
            let c = b[i];
            if c.wrapping_sub(b'!') < 0x5E && (c != b'&' || !stop_at_amp) {
                i += 1;
                continue;
            }
        }
        let c = b[i];
        if c == b'&' {
            return false;
        }
        let (ws, width) = if c.is_ascii() {
            (
                matches!(c, b' ' | b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r'),
                1,
            )
        } else if !may_lead_space(c) {
            // A run of characters none of which can be whitespace, skipped by their lead
            // bytes: decoding and classifying each made non-Latin text slower than before
            // the scan went eight bytes at a time.
            i += utf8_width(c);
            while let Some(&c) = b.get(i).filter(|c| !c.is_ascii() && !may_lead_space(**c)) {
                i += utf8_width(c);
            }
            continue;
        } else {
            let ch = s[i..].chars().next().unwrap_or_default();
            (ch.is_whitespace(), ch.len_utf8())
        };
        if ws {
            if c == b' ' && run < i && spaced != i {
                spaced = i + 1;
                i += 1;
                continue;
            }
            if run < i {
                sink.push_str(&s[run..i]);
                skip = spaced == i;
            }
            if !skip {
                sink.push(' ');
                skip = true;
            }
            // The rest of an ASCII blank run adds nothing (`skip` is set): stepped over here,
            // not byte by byte through the word scan above, which made indented markup slower
            // than before that scan existed.
            i += width;
            while let Some(b' ' | b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r') = b.get(i) {
                i += 1;
            }
            run = i;
            continue;
        }
        i += width;
    }
    sink.push_str(&s[run..]);
    true
}

/// Whether `c`, a UTF-8 lead byte, may start a whitespace character: the non-ASCII ones
/// (U+0085, U+00A0, U+1680, U+2000 to U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) start
/// with one of these.
fn may_lead_space(c: u8) -> bool {
    matches!(c, 0xC2 | 0xE1 | 0xE2 | 0xE3)
}

/// The length of the UTF-8 character whose lead byte (not ASCII) is `c`.
fn utf8_width(c: u8) -> usize {
    if c >= 0xF0 {
        4
    } else if c >= 0xE0 {
        3
    } else {
        2
    }
}

/// Whether `b[from..]` holds a `|`. Eight bytes at a time, the last eight read from the
/// end backwards with the bytes before `from` masked off: a cell's text is a few bytes,
/// and a `memchr` call per cell cost several times more.
fn has_pipe_at_end(b: &[u8], from: usize) -> bool {
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let n = b.len() - from;
    if n == 0 {
        return false;
    }
    if b.len() < 8 {
        return b[from..].contains(&b'|');
    }
    let mut i = from;
    while i + 8 < b.len() {
        if eq_bytes(word(i), b'|') != 0 {
            return true;
        }
        i += 8;
    }
    let keep = u64::MAX << (8 * (8 - (b.len() - i)));
    eq_bytes(word(b.len() - 8), b'|') & keep != 0
}

const ONES: u64 = 0x0101_0101_0101_0101;

/// 0x80 in each byte of `w` equal to `k`, 0 in the others (exact, no carries across).
fn eq_bytes(w: u64, k: u8) -> u64 {
    let v = w ^ (ONES * u64::from(k));
    !(((v & (0x7F * ONES)) + 0x7F * ONES) | v | (0x7F * ONES))
}

/// Whether `s` holds `c`: a byte search, cheaper than a `char` pattern's.
fn has_byte(s: &str, c: u8) -> bool {
    // Most strings searched are a few bytes (attribute values, cells), where the call to
    // the slice search cost more than a loop.
    let b = s.as_bytes();
    if b.len() < 32 {
        b.iter().position(|x| *x == c).is_some()
    } else {
        b.contains(&c)
    }
}

/// `str::trim_end`, with ASCII whitespace handled before falling back to it.
fn trim_end(s: &str) -> &str {
    let mut t = s;
    loop {
        match t.as_bytes().last() {
            Some(b' ' | b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r') => t = &t[..t.len() - 1],
            Some(c) if !c.is_ascii() => return t.trim_end(),
            _ => return t,
        }
    }
}

/// `str::trim_start`, with ASCII whitespace handled before falling back to it.
fn trim_start(s: &str) -> &str {
    let mut t = s;
    loop {
        match t.as_bytes().first() {
            Some(b' ' | b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r') => t = &t[1..],
            Some(c) if !c.is_ascii() => return t.trim_start(),
            _ => return t,
        }
    }
}

fn trim_trailing_spaces(s: &mut String) {
    while s.ends_with(' ') {
        s.pop();
    }
}

/// `tidy`, without the copy when the text is tidy already but for line breaks at its end,
/// which is what the converter's `para` and `block` leave nearly always: checking is a scan
/// for line breaks, where `tidy` copies line by line into a new string.
fn tidy_owned(mut s: String) -> String {
    let keep = s.trim_end_matches('\n').len();
    if is_tidy(&s.as_bytes()[..keep]) {
        s.truncate(keep);
        s
    } else {
        tidy(&s)
    }
}

/// Whether `tidy` leaves `b` as it is, given that `b` does not end with a line break: no
/// line ends with whitespace, no blank line comes first or after another. A line ending in
/// a non-ASCII byte counts as untidy (it may be Unicode whitespace) and goes to `tidy`.
fn is_tidy(b: &[u8]) -> bool {
    let untidy_end = |c: u8| matches!(c, b' ' | b'\t' | b'\x0B' | b'\x0C' | b'\r') || !c.is_ascii();
    if b.last().is_some_and(|c| untidy_end(*c)) || b.first() == Some(&b'\n') {
        return false;
    }
    let mut from = 0;
    while let Some(p) = memchr_long(b'\n', &b[from..]) {
        let nl = from + p;
        // `nl > 0`: the first byte is not a line break.
        let before = b[nl - 1];
        if untidy_end(before) || (before == b'\n' && nl >= 2 && b[nl - 2] == b'\n') {
            return false;
        }
        from = nl + 1;
    }
    true
}

fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = 0;
    // Split at each `\n` rather than by `lines()`: each line is trimmed at its end, which
    // drops a `\r` before the `\n` as `lines()` would, and the empty piece after a final
    // `\n` only adds a line break that is removed below.
    let b = s.as_bytes();
    let mut start = 0;
    while start <= b.len() {
        let end = b[start..]
            .iter()
            .position(|c| *c == b'\n')
            .map_or(b.len(), |p| start + p);
        let line = trim_end(&s[start..end]);
        start = end + 1;
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
    // Most tags have no attributes.
    if b.get(from) == Some(&b'>') {
        return from + 1;
    }
    // From quote to quote rather than a byte at a time with a quote state: eight bytes at a
    // time outside quotes, `memchr_long` inside.
    let mut i = from;
    while let Some(p) = tag_byte(&b[i..]) {
        let at = i + p;
        let q = b[at];
        if q == b'>' {
            return at + 1;
        }
        match memchr_long(q, &b[at + 1..]) {
            Some(r) => i = at + 1 + r + 1,
            None => break,
        }
    }
    b.len()
}

/// First `>`, `"` or `'` in `b`.
fn tag_byte(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(bytes) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
        let m = eq_bytes(w, b'>') | eq_bytes(w, b'"') | eq_bytes(w, b'\'');
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b[i..]
        .iter()
        .position(|c| matches!(c, b'>' | b'"' | b'\''))
        .map(|p| i + p)
}

/// First `needle` at or after `from`. Candidates are found by the needle's first byte, as
/// a script or comment can be long and a window compare at every byte was slow.
fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    find_by(hay, from, needle, |w| w == needle)
}

/// First `needle_lower` at or after `from`, in any ASCII case; its first byte is not a
/// letter.
fn find_ci(hay: &[u8], from: usize, needle_lower: &[u8]) -> Option<usize> {
    find_by(hay, from, needle_lower, |w| {
        w.eq_ignore_ascii_case(needle_lower)
    })
}

fn find_by(
    hay: &[u8],
    from: usize,
    needle: &[u8],
    matches: impl Fn(&[u8]) -> bool,
) -> Option<usize> {
    let mut i = from;
    while let Some(p) = hay.get(i..).and_then(|rest| memchr_long(needle[0], rest)) {
        let at = i + p;
        let window = hay.get(at..at + needle.len())?;
        if matches(window) {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

/// Value of attribute `name` (lowercase) in a tag's attribute text, entity-decoded.
fn attr<'a>(attrs: &'a str, name: &str) -> Option<std::borrow::Cow<'a, str>> {
    // Matched case-insensitively in place: ASCII case changes no byte offsets, and a copy of
    // the attributes per tag was a good part of converting a page of links.
    let lb = attrs.as_bytes();
    let nb = name.as_bytes();
    // Names are lowercase letters: a byte with 0x20 set is the first one in either case
    // only if it is that letter, which rules out most positions before comparing a window.
    let find = |from: usize| {
        let mut i = from;
        while i + nb.len() <= lb.len() {
            if lb[i] | 0x20 == nb[0] && lb[i..i + nb.len()].eq_ignore_ascii_case(nb) {
                return Some(i);
            }
            i += 1;
        }
        None
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
        return Some(decode_entities(&attrs[start..end]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time scanners against plain byte loops, with every byte value at every
    /// offset of a word and near both ends of the input.
    #[test]
    fn word_scanners_match_byte_loops() {
        let naive_rows = |h: &[u8]| {
            (0..h.len())
                .filter(|&at| {
                    h.len() >= at + 4
                        && h[at] == b'<'
                        && h[at + 1].eq_ignore_ascii_case(&b't')
                        && h[at + 2].eq_ignore_ascii_case(&b'r')
                        && (h[at + 3] == b'>' || h[at + 3].is_ascii_whitespace())
                })
                .count()
        };
        let naive_name = |h: &[u8], from: usize| {
            let mut end = from;
            let mut k = 0u64;
            while end < h.len() && h[end].is_ascii_alphanumeric() {
                if end - from < 8 {
                    k |= u64::from(h[end].to_ascii_lowercase()) << (8 * (end - from));
                }
                end += 1;
            }
            (end, k)
        };
        for len in 0..20 {
            for at in 0..len {
                for byte in 0..=255u8 {
                    for fill in [b'a', b'Z', b'7', b'<'] {
                        let mut h = vec![fill; len];
                        h[at] = byte;
                        for from in 0..=len {
                            assert_eq!(scan_name(&h, from), naive_name(&h, from), "{h:?} {from}");
                        }
                        assert_eq!(
                            memchr_long(byte, &h),
                            h.iter().position(|c| *c == byte),
                            "{h:?}"
                        );
                    }
                    let mut h = b"<tr><TR\t<tR <tr\r<trx<t<tr".repeat(1 + len / 8);
                    h.truncate(len);
                    if at < h.len() {
                        h[at] = byte;
                    }
                    let s = String::from_utf8_lossy(&h);
                    assert_eq!(count_rows(&s), naive_rows(s.as_bytes()), "{s:?}");
                }
            }
        }
    }

    /// Wherever the bare row-tag match applies, the general reading of a tag (name scan,
    /// classification, tag end) gives the same; with every byte value in place of each byte
    /// of each pattern, and in place of the byte after it.
    #[test]
    fn bare_row_tags_read_as_the_general_path_does() {
        let general = |h: &[u8]| {
            let closing = h[1] == b'/';
            let start = if closing { 2 } else { 1 };
            let (name_end, k) = scan_name(h, start);
            ((k as u8) >= b'a').then(|| {
                (
                    classify(k, &h[start..name_end]),
                    closing,
                    tag_end(h, name_end),
                )
            })
        };
        let mut hits = 0;
        for pat in [
            "<td>", "<th>", "<tr>", "</td>", "</th>", "</tr>", "</a>", "<TD>", "</tR>", "</A>",
        ] {
            let mut h = pat.as_bytes().to_vec();
            h.extend_from_slice(b"x>  y>  ");
            assert!(bare_row_tag(&h, 0).is_some(), "{pat}");
            for at in 1..=pat.len() {
                for byte in 0..=255u8 {
                    let mut h = h.clone();
                    h[at] = byte;
                    if let Some(fast) = bare_row_tag(&h, 0) {
                        hits += 1;
                        assert!(general(&h) == Some(fast), "{h:?}");
                    }
                }
            }
        }
        // Per pattern: any byte after it (256), each letter in its two cases, each other
        // byte only as itself, and in `<td>` and `</td>` the last letter also as `h` or `r`
        // in either case: 265 for `<td>`, 266 for `</td>`, 260 for `</a>`.
        assert_eq!(hits, 4 * 265 + 4 * 266 + 2 * 260);
    }

    #[test]
    fn raw_text_close_found_in_any_case() {
        assert_eq!(find_ci(b"ab</STYLE", 0, b"</style"), Some(2));
        assert_eq!(find_ci(b"ab</STYL", 0, b"</style"), None);
        assert_eq!(find(b"--->", 0, b"-->"), Some(1));
        assert_eq!(find(b"-->", 4, b"-->"), None);
    }
}
