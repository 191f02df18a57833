//! A buffer's lines as the text of its file, and back: the one place that
//! knows how Neovim writes and reads them (a UTF-8 byte order mark,
//! 'fileformat' dos/mac/unix, 'eol', 'fixeol', 'binary'). The agent's reads
//! of a buffer are encoded here; the buffer sync decodes disk texts and
//! encodes buffers here (through the native functions).

/// The byte order mark a buffer with 'bomb' writes first.
pub const BOM: &str = "\u{feff}";

/// 'fileformat': how lines end in the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileFormat {
    /// `\n`
    #[default]
    Unix,
    /// `\r\n`
    Dos,
    /// `\r`
    Mac,
}

impl FileFormat {
    pub fn line_break(self) -> &'static str {
        match self {
            FileFormat::Unix => "\n",
            FileFormat::Dos => "\r\n",
            FileFormat::Mac => "\r",
        }
    }
}

/// The buffer options that decide how its lines are its file's text
/// (crosses from Lua as `{ fileformat, bomb, eol, fixeol, binary }`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TextFormat {
    pub fileformat: FileFormat,
    /// 'bomb': the file starts with a byte order mark.
    pub bomb: bool,
    /// 'eol': the last line ends with a line break.
    pub eol: bool,
    /// 'fixeol': a line break is written after the last line anyway
    /// (unless 'binary').
    pub fixeol: bool,
    pub binary: bool,
}

impl Default for TextFormat {
    /// Neovim's defaults.
    fn default() -> Self {
        Self {
            fileformat: FileFormat::Unix,
            bomb: false,
            eol: true,
            fixeol: true,
            binary: false,
        }
    }
}

impl TextFormat {
    /// The last line gets a line break when written.
    pub fn writes_eol(&self) -> bool {
        self.eol || (self.fixeol && !self.binary)
    }
}

/// A file's text as buffer lines: the lines borrow the text. Bytes, not
/// `str`: a buffer may hold bytes that are not UTF-8, and they stay as
/// they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded<'a> {
    pub lines: Vec<&'a [u8]>,
    /// The text ended with a line break (the buffer's 'eol' after a read).
    pub eol: bool,
}

/// The buffer lines for a file's `text`, as Neovim reads it into a buffer
/// with `format`: a leading byte order mark is dropped when the buffer has
/// 'bomb' (Neovim keeps it out of the lines), lines are split at the
/// format's line break (a dos file's lone `\n` too, its `\r` dropped), and
/// a final line break ends the last line rather than starting a new one.
pub fn decode<'a>(text: &'a [u8], format: &TextFormat) -> Decoded<'a> {
    let mut text = text;
    if format.bomb {
        text = text.strip_prefix(BOM.as_bytes()).unwrap_or(text);
    }
    let nl = if format.fileformat == FileFormat::Mac {
        b'\r'
    } else {
        b'\n'
    };
    let eol = text.last() == Some(&nl);
    if eol {
        text = &text[..text.len() - 1];
    }
    let mut lines: Vec<&'a [u8]> = text.split(|&b| b == nl).collect();
    if format.fileformat == FileFormat::Dos {
        for l in &mut lines {
            *l = l.strip_suffix(b"\r").unwrap_or(l);
        }
    }
    Decoded { lines, eol }
}

/// The text a `:write` of a buffer holding `lines` with `format` puts in
/// its file (the inverse of `decode`). One empty line is taken for an
/// empty buffer: an empty file.
pub fn encode<S: AsRef<[u8]>>(lines: &[S], format: &TextFormat) -> Vec<u8> {
    if lines.len() <= 1 && lines.first().is_none_or(|l| l.as_ref().is_empty()) {
        return Vec::new();
    }
    let nl = format.fileformat.line_break().as_bytes();
    let size: usize = lines.iter().map(|l| l.as_ref().len() + nl.len()).sum();
    let mut out = Vec::with_capacity(size + BOM.len());
    if format.bomb {
        out.extend_from_slice(BOM.as_bytes());
    }
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(nl);
        }
        out.extend_from_slice(l.as_ref());
    }
    if format.writes_eol() {
        out.extend_from_slice(nl);
    }
    out
}

/// `encode` of the lines of `joined` (the buffer's lines joined with `\n`,
/// as they cross from Lua), reusing its allocation for a unix file: a 10 MB
/// buffer is not copied again.
pub fn encode_joined(joined: String, format: &TextFormat) -> String {
    if joined.is_empty() {
        return joined;
    }
    let nl = format.fileformat.line_break();
    let mut out = match format.fileformat {
        FileFormat::Unix if !format.bomb => joined,
        FileFormat::Unix => format!("{BOM}{joined}"),
        _ => {
            let breaks = joined.bytes().filter(|&b| b == b'\n').count();
            let mut out = String::with_capacity(joined.len() + breaks + 2 + BOM.len());
            if format.bomb {
                out.push_str(BOM);
            }
            for (i, l) in joined.split('\n').enumerate() {
                if i > 0 {
                    out.push_str(nl);
                }
                out.push_str(l);
            }
            out
        }
    };
    if format.writes_eol() {
        out.push_str(nl);
    }
    out
}

/// The lines of `joined` (buffer lines joined with `\n`): `""` is one
/// empty line, as in a buffer.
pub fn split_joined(joined: &[u8]) -> Vec<&[u8]> {
    joined.split(|&b| b == b'\n').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(ff: FileFormat, bomb: bool, eol: bool, fixeol: bool) -> TextFormat {
        TextFormat {
            fileformat: ff,
            bomb,
            eol,
            fixeol,
            binary: false,
        }
    }

    fn lines_of(text: &str, f: &TextFormat) -> (Vec<String>, bool) {
        let d = decode(text.as_bytes(), f);
        let lines = d
            .lines
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned());
        (lines.collect(), d.eol)
    }

    fn encoded<S: AsRef<str>>(lines: &[S], f: &TextFormat) -> String {
        let lines: Vec<&[u8]> = lines.iter().map(|l| l.as_ref().as_bytes()).collect();
        String::from_utf8(encode(&lines, f)).unwrap()
    }

    /// Each case: a file's text, the format Neovim reads it with, the lines
    /// and eol of the buffer; writing them back gives the text again.
    #[test]
    fn decode_and_encode_are_inverse_for_each_format() {
        use FileFormat::*;
        let cases: Vec<(&str, TextFormat, Vec<&str>, bool)> = vec![
            ("a\nb\n", fmt(Unix, false, true, true), vec!["a", "b"], true),
            (
                "a\r\nb\r\n",
                fmt(Dos, false, true, true),
                vec!["a", "b"],
                true,
            ),
            ("a\rb\r", fmt(Mac, false, true, true), vec!["a", "b"], true),
            // No line break at the end ('noeol', 'nofixeol').
            (
                "a\nb",
                fmt(Unix, false, false, false),
                vec!["a", "b"],
                false,
            ),
            (
                "a\r\nb",
                fmt(Dos, false, false, false),
                vec!["a", "b"],
                false,
            ),
            ("a\rb", fmt(Mac, false, false, false), vec!["a", "b"], false),
            // A byte order mark: not in the lines; written back with 'bomb'.
            (
                "\u{feff}a\r\nb\r\n",
                fmt(Dos, true, true, true),
                vec!["a", "b"],
                true,
            ),
            ("\u{feff}x\n", fmt(Unix, true, true, true), vec!["x"], true),
            (
                "\u{feff}x\ry\r",
                fmt(Mac, true, true, true),
                vec!["x", "y"],
                true,
            ),
            // An empty file is one empty line.
            ("", fmt(Unix, false, false, true), vec![""], false),
            ("", fmt(Dos, true, false, true), vec![""], false),
            // Empty lines are lines.
            (
                "\n\nx\n",
                fmt(Unix, false, true, true),
                vec!["", "", "x"],
                true,
            ),
            (
                "x\r\n\r\n",
                fmt(Dos, false, true, true),
                vec!["x", ""],
                true,
            ),
        ];
        for (text, f, lines, eol) in cases {
            let (got, got_eol) = lines_of(text, &f);
            assert_eq!(
                (got, got_eol),
                (lines.iter().map(|l| l.to_string()).collect(), eol),
                "{text:?}"
            );
            let f = TextFormat { eol, ..f };
            assert_eq!(encoded(&lines, &f), text, "{text:?} {f:?}");
            assert_eq!(encode_joined(lines.join("\n"), &f), text, "{text:?} {f:?}");
        }
        // A file of one line break reads as one empty line, which writes
        // an empty file (the lines cannot tell it from an empty buffer).
        let unix = fmt(Unix, false, true, true);
        assert_eq!(lines_of("\n", &unix), (vec![String::new()], true));
        assert_eq!(encoded(&[""], &unix), "");
        assert_eq!(encode_joined(String::new(), &unix), "");
    }

    #[test]
    fn a_bom_is_content_when_the_buffer_has_no_bomb() {
        let f = fmt(FileFormat::Unix, false, true, true);
        let (lines, _) = lines_of("\u{feff}a\n", &f);
        assert_eq!(lines, vec!["\u{feff}a"]);
        assert_eq!(encoded(&lines, &f), "\u{feff}a\n");
        // With 'bomb', only a real one is dropped.
        let b = fmt(FileFormat::Unix, true, true, true);
        assert_eq!(lines_of("a\n", &b).0, vec!["a"]);
        assert_eq!(encode_joined("a".into(), &b), "\u{feff}a\n");
    }

    #[test]
    fn dos_and_mac_files_split_as_neovim_reads_them() {
        let dos = fmt(FileFormat::Dos, false, true, true);
        // A lone \n still ends a line; its missing \r is not added back.
        assert_eq!(lines_of("a\nb\r\n", &dos).0, vec!["a", "b"]);
        let mac = fmt(FileFormat::Mac, false, true, true);
        // In a mac file \n is part of a line.
        assert_eq!(lines_of("a\nb\r", &mac).0, vec!["a\nb"]);
    }

    #[test]
    fn bytes_that_are_not_utf8_stay_as_they_are() {
        let f = fmt(FileFormat::Dos, false, true, true);
        let d = decode(b"\xff\xfe\r\nx\r\n", &f);
        assert_eq!(d.lines, vec![&b"\xff\xfe"[..], b"x"]);
        assert_eq!(encode(&d.lines, &f), b"\xff\xfe\r\nx\r\n");
    }

    #[test]
    fn fixeol_adds_the_last_line_break_unless_binary() {
        let lines = ["a", "b"];
        let noeol = fmt(FileFormat::Unix, false, false, true);
        assert_eq!(encoded(&lines, &noeol), "a\nb\n");
        let bin = TextFormat {
            binary: true,
            ..noeol
        };
        assert_eq!(encoded(&lines, &bin), "a\nb");
        assert_eq!(encode_joined("a\nb".into(), &bin), "a\nb");
        let dos = fmt(FileFormat::Dos, false, false, false);
        assert_eq!(encoded(&lines, &dos), "a\r\nb");
        assert_eq!(encode_joined("a\nb".into(), &dos), "a\r\nb");
        assert_eq!(split_joined(b""), vec![b""]);
        assert_eq!(split_joined(b"a\n"), vec![&b"a"[..], b""]);
    }

    #[test]
    fn the_format_crosses_as_a_table_of_options() {
        let f: TextFormat = serde_json::from_value(serde_json::json!({
            "fileformat": "dos", "bomb": true, "eol": false, "fixeol": true, "binary": false
        }))
        .unwrap();
        assert_eq!(f, fmt(FileFormat::Dos, true, false, true));
        let partial: TextFormat =
            serde_json::from_value(serde_json::json!({ "fileformat": "mac" })).unwrap();
        assert_eq!(partial, fmt(FileFormat::Mac, false, true, true));
        assert!(serde_json::from_value::<TextFormat>(serde_json::json!({ "ff": "dos" })).is_err());
    }
}
