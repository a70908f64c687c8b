//! A unified diff of two texts, line by line (longest common subsequence), with three
//! lines of context: what `once init --check` and `--dry-run` print. Manifests are small,
//! so the quadratic table is fine; past [`MAX_CELLS`] the whole file is shown replaced.

/// The largest table (lines before × lines after) the diff computes.
const MAX_CELLS: usize = 4_000_000;

const CONTEXT: usize = 3;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Line {
    Same(usize, usize),
    Removed(usize),
    Added(usize),
}

fn script(a: &[&str], b: &[&str]) -> Vec<Line> {
    let (n, m) = (a.len(), b.len());
    if n.saturating_mul(m) > MAX_CELLS {
        return (0..n)
            .map(Line::Removed)
            .chain((0..m).map(Line::Added))
            .collect();
    }
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[at(i, j)] = if a[i] == b[j] {
                lcs[at(i + 1, j + 1)] + 1
            } else {
                lcs[at(i + 1, j)].max(lcs[at(i, j + 1)])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            out.push(Line::Same(i, j));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[at(i + 1, j)] >= lcs[at(i, j + 1)]) {
            out.push(Line::Removed(i));
            i += 1;
        } else {
            out.push(Line::Added(j));
            j += 1;
        }
    }
    out
}

/// The unified diff from `before` to `after` of the file `path` (`a/` and `b/` prefixed;
/// `/dev/null` for a file that did not exist); empty when they are equal.
pub fn unified_diff(path: &str, before: Option<&str>, after: &str) -> String {
    let old = before.unwrap_or("");
    if old == after && before.is_some() {
        return String::new();
    }
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    let lines = script(&a, &b);
    let mut out = format!(
        "--- {}\n+++ b/{path}\n",
        if before.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".to_owned()
        }
    );
    let changed: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !matches!(l, Line::Same(..)))
        .map(|(i, _)| i)
        .collect();
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(CONTEXT);
        let mut end = changed[k];
        while k < changed.len() && changed[k] <= end + 2 * CONTEXT + 1 {
            end = changed[k];
            k += 1;
        }
        let end = (end + CONTEXT + 1).min(lines.len());
        let hunk = &lines[start..end];
        let first_old = hunk.iter().find_map(|l| match l {
            Line::Same(i, _) | Line::Removed(i) => Some(*i),
            Line::Added(_) => None,
        });
        let first_new = hunk.iter().find_map(|l| match l {
            Line::Same(_, j) | Line::Added(j) => Some(*j),
            Line::Removed(_) => None,
        });
        let old_count = hunk.iter().filter(|l| !matches!(l, Line::Added(_))).count();
        let new_count = hunk
            .iter()
            .filter(|l| !matches!(l, Line::Removed(_)))
            .count();
        let position = |first: Option<usize>, count: usize, before: usize| match first {
            Some(i) => (i + 1, count),
            None => (before, 0),
        };
        // An empty side is numbered by the line before the hunk, as diff does.
        let before_old = lines[..start]
            .iter()
            .filter(|l| !matches!(l, Line::Added(_)))
            .count();
        let before_new = lines[..start]
            .iter()
            .filter(|l| !matches!(l, Line::Removed(_)))
            .count();
        let (os, oc) = position(first_old, old_count, before_old);
        let (ns, nc) = position(first_new, new_count, before_new);
        out.push_str(&format!("@@ -{os},{oc} +{ns},{nc} @@\n"));
        for line in hunk {
            match line {
                Line::Same(i, _) => out.push_str(&format!(" {}\n", a[*i])),
                Line::Removed(i) => out.push_str(&format!("-{}\n", a[*i])),
                Line::Added(j) => out.push_str(&format!("+{}\n", b[*j])),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::unified_diff;

    #[test]
    fn hunks_have_context_and_numbers() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let after = "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\nk\n";
        expect_test::expect![[r#"
            --- a/x/once.toml
            +++ b/x/once.toml
            @@ -2,9 +2,10 @@
             b
             c
             d
            -e
            +E
             f
             g
             h
             i
             j
            +k
        "#]]
        .assert_eq(&unified_diff("x/once.toml", Some(before), after));
        assert_eq!(unified_diff("x", Some("same\n"), "same\n"), "");
        expect_test::expect![[r#"
            --- /dev/null
            +++ b/new/once.toml
            @@ -0,0 +1,2 @@
            +[[target]]
            +name = "A"
        "#]]
        .assert_eq(&unified_diff(
            "new/once.toml",
            None,
            "[[target]]\nname = \"A\"\n",
        ));
    }
}
