use super::*;

fn l(s: &str) -> Vec<String> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn hunks_are_minimal_and_apply_back() {
    let old = l("a,b,c,d,e");
    let new = l("a,B,c,d,e,f");
    let h = hunks(&old, &new);
    assert_eq!(
        h,
        vec![
            Hunk {
                old_start: 1,
                old_end: 2,
                lines: l("B")
            },
            Hunk {
                old_start: 5,
                old_end: 5,
                lines: l("f")
            }
        ]
    );
    assert_eq!(apply(&old, &h), new);
    assert!(hunks(&old, &old).is_empty());
}

/// The buffer sync's hunks: byte lines (not all UTF-8), applied
/// bottom-up as `acp.editor.sync` does, give the new lines; a large
/// text changed in a few places gives as many hunks.
#[test]
fn byte_hunks_turn_the_old_lines_into_the_new() {
    fn apply_bytes<'a>(old: &[&'a [u8]], hunks: &'a [ByteHunk]) -> Vec<&'a [u8]> {
        let mut out: Vec<&[u8]> = old.to_vec();
        for h in hunks.iter().rev() {
            out.splice(h.old_start..h.old_end, h.lines.iter().map(Vec::as_slice));
        }
        out
    }
    let old: Vec<&[u8]> = vec![b"a", b"\xff\xfe", b"c", b"d"];
    let new: Vec<&[u8]> = vec![b"x", b"a", b"\xff", b"c", b"d", b"e"];
    let h = byte_hunks(&old, &new);
    assert_eq!(apply_bytes(&old, &h), new);
    assert_eq!(h.len(), 3);
    assert!(byte_hunks(&old, &old).is_empty());

    let old_text: Vec<String> = (0..100_000).map(|i| format!("line {i}")).collect();
    let mut new_text = old_text.clone();
    for k in 1..=5 {
        new_text[k * 16_000] = format!("changed {k}");
    }
    let old: Vec<&[u8]> = old_text.iter().map(|l| l.as_bytes()).collect();
    let new: Vec<&[u8]> = new_text.iter().map(|l| l.as_bytes()).collect();
    let t0 = Instant::now();
    let h = byte_hunks(&old, &new);
    println!("100k lines, 5 changed: {:?}", t0.elapsed());
    assert_eq!(h.len(), 5);
    assert_eq!(apply_bytes(&old, &h), new);
    // merge_lines takes any line type, as merge3 does text.
    let ours: Vec<&[u8]> = vec![b"1", b"TWO", b"3"];
    let theirs: Vec<&[u8]> = vec![b"1", b"2", b"3", b"\xff"];
    let base: Vec<&[u8]> = vec![b"1", b"2", b"3"];
    let merged: Vec<&[u8]> = merge_lines(&base, &ours, &theirs)
        .unwrap()
        .into_iter()
        .copied()
        .collect();
    assert_eq!(merged, vec![&b"1"[..], b"TWO", b"3", b"\xff"]);
}

#[test]
fn merge_keeps_user_edits_elsewhere() {
    let base = l("1,2,3,4,5,6");
    let agent = l("1,TWO,3,4,5,6");
    let user = l("1,2,3,4,five,6,7");
    assert_eq!(
        merge3(&base, &agent, &user).unwrap(),
        l("1,TWO,3,4,five,6,7")
    );
}

#[test]
fn merge_reports_overlapping_edits() {
    let base = l("1,2,3");
    let agent = l("1,agent,3");
    let user = l("1,user,3");
    assert_eq!(merge3(&base, &agent, &user), Err((2, 2)));
    // The same change on both sides is not a conflict.
    assert_eq!(merge3(&base, &agent, &agent).unwrap(), agent);
}

#[test]
fn merge_with_inserts_on_both_sides() {
    let base = l("a,b");
    let agent = l("x,a,b");
    let user = l("a,b,y");
    assert_eq!(merge3(&base, &agent, &user).unwrap(), l("x,a,b,y"));
    let both_at_same_place = l("a,z,b");
    assert!(merge3(&base, &l("a,w,b"), &both_at_same_place).is_err());
}

/// The card's diff lines as rendered before the bounds: the whole
/// unified diff, header dropped, `\r` trimmed.
fn unbounded_lines(old: &str, new: &str) -> Vec<String> {
    let text = similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header("a", "b")
        .to_string();
    text.lines()
        .skip(2)
        .map(|l| l.trim_end_matches('\r').to_owned())
        .collect()
}

fn numbered(n: usize, changed_every: usize, tag: &str) -> String {
    (0..n)
        .map(|i| {
            if changed_every > 0 && i % changed_every == 0 {
                format!("{tag} line {i}\n")
            } else {
                format!("line {i}\n")
            }
        })
        .collect()
}

#[test]
fn a_snippet_without_final_newlines_says_nothing_about_them() {
    let lines = |old: &str, new: &str| match unified_diff_bounded(old, new, &DiffLimits::default())
    {
        DiffBody::Unified { lines, .. } => lines,
        other => panic!("{other:?}"),
    };
    // claude-agent-acp 0.100.0's Edit: the edited region, no final newline.
    let claude = lines(
        "function M.greet()\n  print('helo')",
        "function M.greet(name)\n  print('hello, ' .. name)",
    );
    assert_eq!(
        claude,
        [
            "@@ -1,2 +1,2 @@",
            "-function M.greet()",
            "-  print('helo')",
            "+function M.greet(name)",
            "+  print('hello, ' .. name)"
        ]
    );
    // A new file, or one emptied, of one line: its line and nothing else.
    assert_eq!(lines("", "x"), ["@@ -0,0 +1 @@", "+x"]);
    assert_eq!(lines("x", ""), ["@@ -1 +0,0 @@", "-x"]);
    // The two sides really differ in their final newline: said once.
    assert_eq!(
        lines("a\nb\n", "a\nB"),
        [
            "@@ -1,2 +1,2 @@",
            " a",
            "-b",
            "+B",
            "\\ No newline at end of file"
        ]
    );
    assert_eq!(
        lines("a", "a\n"),
        ["@@ -1 +1 @@", "-a", "\\ No newline at end of file", "+a"]
    );
}

#[test]
fn bounded_diff_matches_the_unbounded_rendering() {
    let big_old = numbered(2000, 0, "");
    let big_new = numbered(2000, 40, "changed");
    let pairs: Vec<(String, String)> = vec![
        ("a\nb\nc\n".into(), "a\nB\nc\n".into()),
        ("a\nb\nc".into(), "a\nb\nc\nd\n".into()),
        ("a\r\nb\r\n".into(), "a\r\nc\r\n".into()),
        ("".into(), "new\nfile\n".into()),
        ("same\n".into(), "same\n".into()),
        ("x\n".into(), "y".into()),
        (big_old.clone(), big_new.clone()),
    ];
    let all = DiffLimits {
        max_output_lines: usize::MAX,
        ..DiffLimits::default()
    };
    for (old, new) in &pairs {
        let want = unbounded_lines(old, new);
        match unified_diff_bounded(old, new, &all) {
            DiffBody::Unified { lines, more, .. } => {
                assert_eq!((lines, more), (want.clone(), 0), "{old:?} -> {new:?}");
            }
            other => panic!("{other:?}"),
        }
        // Cut at 400 lines, the rest counted exactly.
        match unified_diff_bounded(old, new, &DiffLimits::default()) {
            DiffBody::Unified { lines, more, .. } => {
                let n = want.len().min(400);
                assert_eq!(lines, want[..n].to_vec());
                assert_eq!(more, want.len() - n);
            }
            other => panic!("{other:?}"),
        }
    }
    // The big pair has 50 changed lines, enough hunks to be cut.
    match unified_diff_bounded(&big_old, &big_new, &DiffLimits::default()) {
        DiffBody::Unified {
            more,
            added,
            removed,
            ..
        } => assert_eq!((more > 0, added, removed), (true, 50, 50)),
        other => panic!("{other:?}"),
    }
    // A missing final newline is counted in `more` like it is shown.
    let old = "1\n".repeat(100) + "end\n";
    let new = "2\n".repeat(100) + "END";
    let want = unbounded_lines(&old, &new);
    assert!(want.iter().any(|l| l.starts_with("\\ No newline")));
    let few = DiffLimits {
        max_output_lines: 1,
        ..DiffLimits::default()
    };
    match unified_diff_bounded(&old, &new, &few) {
        DiffBody::Unified { lines, more, .. } => assert_eq!(lines.len() + more, want.len()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn large_diffs_become_summaries() {
    let lim = DiffLimits::default();
    let timed = |old: &str, new: &str| {
        let t0 = Instant::now();
        let body = unified_diff_bounded(old, new, &lim);
        (body, t0.elapsed())
    };
    // 2 × 20,000 lines, all different: too slow to diff within bounds.
    let old = numbered(20_000, 1, "old");
    let new = numbered(20_000, 1, "new");
    let (body, took) = timed(&old, &new);
    println!("2 x 20k lines, all changed: {took:?}");
    assert_eq!(
        body,
        DiffBody::Summary {
            added: 20_000,
            removed: 20_000,
            reason: SummaryReason::Timeout
        }
    );
    // Every other line changed.
    let (body, took) = timed(&numbered(20_000, 0, ""), &numbered(20_000, 2, "new"));
    println!("2 x 20k lines, every other line changed: {took:?}");
    match body {
        DiffBody::Summary { added, removed, .. } => {
            assert_eq!((added, removed), (10_000, 10_000))
        }
        DiffBody::Unified {
            lines,
            added,
            removed,
            ..
        } => {
            assert!(lines.len() <= lim.max_output_lines);
            assert_eq!((added, removed), (10_000, 10_000));
        }
    }
    // One line changed in 20,000: the real hunk, quickly.
    let mut one = numbered(20_000, 0, "");
    one = one.replacen("line 10000\n", "line ten thousand\n", 1);
    let (body, took) = timed(&numbered(20_000, 0, ""), &one);
    println!("2 x 20k lines, one changed: {took:?}");
    assert_eq!(
        body,
        DiffBody::Unified {
            lines: unbounded_lines(&numbered(20_000, 0, ""), &one),
            more: 0,
            added: 1,
            removed: 1
        }
    );
    // Over the size limits: summarised without diffing.
    let small = DiffLimits {
        max_bytes: 100,
        ..lim
    };
    let (a, b) = ("x\n".repeat(40), "y\n".repeat(30) + "x\n");
    assert_eq!(
        unified_diff_bounded(&a, &b, &small),
        DiffBody::Summary {
            added: 30,
            removed: 39,
            reason: SummaryReason::TooLarge
        }
    );
    let few_lines = DiffLimits {
        max_lines: 50,
        ..lim
    };
    assert!(matches!(
        unified_diff_bounded(&a, &b, &few_lines),
        DiffBody::Summary {
            reason: SummaryReason::TooLarge,
            ..
        }
    ));
    let huge = "some line of text\n".repeat(1_000_000);
    let t0 = Instant::now();
    let body = unified_diff_bounded("", &huge, &lim);
    println!("new file of 1M lines: {:?}", t0.elapsed());
    assert_eq!(
        body,
        DiffBody::Summary {
            added: 1_000_000,
            removed: 0,
            reason: SummaryReason::TooLarge
        }
    );
}

#[test]
fn line_delta_counts_multisets() {
    assert_eq!(line_count_delta("a\nb\nc\n", "c\na\nb\n"), (0, 0));
    assert_eq!(line_count_delta("a\na\n", "a\n"), (0, 1));
    assert_eq!(line_count_delta("a\r\nb", "a\nb\nb\n"), (1, 0));
    assert_eq!(line_count_delta("", "x\ny\n"), (2, 0));
    assert_eq!(line_count_delta("b\n", "ab\n"), (1, 1));
    assert_eq!(line_count_delta("x\nab\n", "x\nb\n"), (1, 1));

    // Against a plain multiset count, on texts with shared heads and
    // tails cut at every kind of place.
    let naive = |old: &str, new: &str| {
        let mut m: HashMap<&str, isize> = HashMap::new();
        old.lines().for_each(|l| *m.entry(l).or_default() -= 1);
        new.lines().for_each(|l| *m.entry(l).or_default() += 1);
        m.values().fold((0, 0), |(a, r), &c| {
            (a + c.max(0) as usize, r + (-c).max(0) as usize)
        })
    };
    let mut seed = 7u64;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let pieces = ["a", "b", "ab", "ba", "\n", "\r\n", "é", ""];
    for _ in 0..3000 {
        let mut text = |len: u64| -> String {
            (0..len)
                .map(|_| pieces[next(pieces.len() as u64) as usize])
                .collect()
        };
        let (head, o, n, tail) = (text(6), text(5), text(5), text(6));
        let (old, new) = (format!("{head}{o}{tail}"), format!("{head}{n}{tail}"));
        assert_eq!(
            line_count_delta(&old, &new),
            naive(&old, &new),
            "{old:?} {new:?}"
        );
    }
}

#[test]
fn text_lines_round_trip() {
    for t in ["", "a", "a\n", "a\nb", "a\r\nb\r\n", "\n", "x\n\n"] {
        assert_eq!(Lines::from_text(t).to_text(), t, "{t:?}");
    }
    let crlf = Lines::from_text("a\r\nb\r\n");
    assert_eq!(
        (crlf.lines.clone(), crlf.eol, crlf.crlf),
        (vec!["a".into(), "b".into()], true, true)
    );
}
