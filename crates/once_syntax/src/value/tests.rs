//! Range conventions of the value layer, checked on small documents: each
//! entry is rendered as `key@key_range: kind@value_range (header@range)` with
//! the text each range covers.

use expect_test::{Expect, expect};

use super::{Table, ValueKind, document};

fn check(text: &str, expect: Expect) {
    let document = document(&crate::parse(text));
    let mut out = String::new();
    render_table(text, &document.root, 0, &mut out);
    for error in &document.errors {
        out.push_str(&format!(
            "error {:?} {}: {:?}\n",
            error.range,
            error.message,
            slice(text, error.range)
        ));
    }
    expect.assert_eq(&out);
}

fn slice(text: &str, range: rowan::TextRange) -> &str {
    text.get(std::ops::Range::<usize>::from(range))
        .unwrap_or_default()
}

fn render_table(text: &str, table: &Table, depth: usize, out: &mut String) {
    for entry in &table.entries {
        let indent = "  ".repeat(depth);
        let value = &entry.value;
        out.push_str(&format!(
            "{indent}{}@{:?} {:?}: {}@{:?} {:?}",
            entry.key,
            entry.key_range,
            slice(text, entry.key_range),
            value.kind.type_name(),
            value.range,
            slice(text, value.range)
        ));
        if let ValueKind::Table(table) = &value.kind
            && let Some(header) = table.header_range
        {
            out.push_str(&format!(" header@{header:?}"));
        }
        out.push('\n');
        match &value.kind {
            ValueKind::Table(table) => render_table(text, table, depth + 1, out),
            ValueKind::Array(items) => {
                for item in items {
                    if let ValueKind::Table(table) = &item.kind {
                        out.push_str(&format!(
                            "{indent}  - table@{:?} {:?}\n",
                            item.range,
                            slice(text, item.range)
                        ));
                        render_table(text, table, depth + 2, out);
                    }
                }
            }
            _ => {}
        }
    }
}

#[test]
fn scalar_and_dotted_key_ranges() {
    check(
        "a.b.c = 1\ns = \"x\"\n",
        expect![[r#"
            a@0..1 "a": table@0..9 "a.b.c = 1"
              b@2..3 "b": table@0..9 "a.b.c = 1"
                c@4..5 "c": integer@8..9 "1"
            s@10..11 "s": string@14..17 "\"x\""
        "#]],
    );
}

#[test]
fn header_and_inline_table_ranges() {
    check(
        "[workspace]\nattrs = { srcs = [\"a\"] }\n[x.y]\n",
        expect![[r#"
            workspace@1..10 "workspace": table@0..11 "[workspace]" header@0..11
              attrs@12..17 "attrs": table@20..36 "{ srcs = [\"a\"] }"
                srcs@22..26 "srcs": array@29..34 "[\"a\"]"
            x@38..39 "x": table@37..42 "[x.y]"
              y@40..41 "y": table@37..42 "[x.y]" header@37..42
        "#]],
    );
}

#[test]
fn array_of_tables_ranges() {
    check(
        "[[target]]\nname = \"a\"\n[[target]]\nname = \"b\"\n",
        expect![[r#"
            target@2..8 "target": array@0..10 "[[target]]"
              - table@0..10 "[[target]]"
                name@11..15 "name": string@18..21 "\"a\""
              - table@22..32 "[[target]]"
                name@33..37 "name": string@40..43 "\"b\""
        "#]],
    );
}

#[test]
fn error_ranges_point_at_the_offending_key_or_value() {
    check(
        "a = 1\na = 2\nb = 0x\n[a]\n",
        expect![[r#"
            a@0..1 "a": integer@4..5 "1"
            error 6..7 duplicate key `a`: "a"
            error 16..18 invalid hexadecimal integer `0x`: "0x"
            error 20..21 cannot define table `a`: it is already an integer: "a"
        "#]],
    );
}
