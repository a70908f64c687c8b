//! Editing: format-preserving create/update/delete on manifests full of comments and odd
//! formatting, all-or-nothing batches, path confinement, and materializing every starter.
//! Workspaces are inline fixtures (`once_fixture`); the starter workspaces come from the
//! kind catalog, so they are materialized by the code under test, not written here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use expect_test::{Expect, expect};
use once_analysis::{AnalysisHost, EditOperation, EditOutcome, EditRequest, MemorySystem, System};
use once_fixture::Fixture;
use once_model::AttrValue;

const ROOT: &str = once_fixture::ROOT;

/// The root alone.
const EMPTY: &str = r#"
    //- /once.toml
    [workspace]
"#;

/// The package `pkg` of odd formatting, full of comments.
const ODD: &str = r#"
    //- /once.toml
    [workspace]
    //- /pkg/once.toml
    # The package of odd formatting.
      # (indented comment)

    [[target]]   # the library
    name="Core"
    kind = "rust_library"   # trailing comment
    srcs = [
        "src/**/*.rs",  # all sources
    ]
    visibility = ['public']

    [target.attrs]
    # the crate name
    crate_name = "core"
    edition = "2021"    # pinned


    # Two blank lines above.
    [[target]]
    name = "Tool"
    kind="rust_binary"
    deps=["./Core"]

    [target.attrs]
    crate_name = "tool"
"#;

fn host(fixture: &str) -> (AnalysisHost, MemorySystem) {
    let system = Fixture::parse(fixture).system();
    let host = AnalysisHost::load(Arc::new(system.clone()), PathBuf::from(ROOT));
    (host, system)
}

/// The text of `pkg/once.toml` as [`ODD`] writes it.
fn odd_manifest() -> String {
    Fixture::parse(ODD).text("pkg/once.toml").to_owned()
}

fn s(v: &str) -> AttrValue {
    AttrValue::String(v.to_owned())
}

fn list(items: &[&str]) -> AttrValue {
    AttrValue::List(items.iter().map(|i| s(i)).collect())
}

fn dict(entries: &[(&str, AttrValue)]) -> AttrValue {
    AttrValue::Dict(
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    )
}

fn read(system: &MemorySystem, path: &str) -> String {
    system
        .read_to_string(Path::new(&format!("{ROOT}/{path}")))
        .unwrap_or_default()
}

/// Applies one batch to `pkg/once.toml` of [`ODD`]; checks the result validates and
/// snapshots the new text.
fn check(operations: Vec<EditOperation>, expect: Expect) {
    let (mut host, system) = host(ODD);
    let outcome = host
        .apply_edit(&EditRequest {
            package: "pkg".into(),
            operations,
        })
        .expect("not refused");
    assert!(
        matches!(outcome, EditOutcome::Applied { changed: true, .. }),
        "{outcome:?}"
    );
    let text = read(&system, "pkg/once.toml");
    let validation = host
        .analysis()
        .validate_target(&AttrValue::Dict(Vec::new()))
        .unwrap();
    drop(validation);
    let diagnostics: Vec<String> = host
        .analysis()
        .validate_workspace()
        .unwrap()
        .diagnostics
        .iter()
        .filter(|d| d.diagnostic.is_error())
        .map(|d| d.diagnostic.message.clone())
        .collect();
    assert!(diagnostics.is_empty(), "{diagnostics:?}\n{text}");
    expect.assert_eq(&text);
}

#[test]
fn create_appends_a_table_formatted_like_its_neighbours() {
    check(
        vec![EditOperation::Create {
            target: dict(&[
                ("name", s("Extra")),
                ("kind", s("rust_library")),
                ("srcs", list(&["extra/**/*.rs"])),
                ("deps", list(&["./Core"])),
                ("attrs", dict(&[("crate_name", s("extra"))])),
            ]),
            comment: None,
        }],
        expect![[r##"
            # The package of odd formatting.
              # (indented comment)

            [[target]]   # the library
            name="Core"
            kind = "rust_library"   # trailing comment
            srcs = [
                "src/**/*.rs",  # all sources
            ]
            visibility = ['public']

            [target.attrs]
            # the crate name
            crate_name = "core"
            edition = "2021"    # pinned


            # Two blank lines above.
            [[target]]
            name = "Tool"
            kind="rust_binary"
            deps=["./Core"]

            [target.attrs]
            crate_name = "tool"

            [[target]]
            name = "Extra"
            kind = "rust_library"
            deps = ["./Core"]
            srcs = ["extra/**/*.rs"]

            [target.attrs]
            crate_name = "extra"
        "##]],
    );
}

#[test]
fn update_replaces_only_the_touched_values() {
    check(
        vec![
            EditOperation::Update {
                target_name: "Core".into(),
                set: vec![
                    ("deps".into(), Some(list(&["./Tool2"]))),
                    ("srcs".into(), Some(list(&["src/**/*.rs"]))),
                    (
                        "attrs".into(),
                        Some(dict(&[("crate_name", s("core")), ("edition", s("2024"))])),
                    ),
                    ("visibility".into(), None),
                ],
            },
            EditOperation::Create {
                target: dict(&[
                    ("name", s("Tool2")),
                    ("kind", s("rust_library")),
                    ("srcs", list(&["t/*.rs"])),
                    ("attrs", dict(&[("crate_name", s("tool2"))])),
                ]),
                comment: None,
            },
        ],
        expect![[r##"
            # The package of odd formatting.
              # (indented comment)

            [[target]]   # the library
            name="Core"
            kind = "rust_library"   # trailing comment
            srcs = [
                "src/**/*.rs",  # all sources
            ]
            deps = ["./Tool2"]

            [target.attrs]
            # the crate name
            crate_name = "core"
            edition = "2024"    # pinned


            # Two blank lines above.
            [[target]]
            name = "Tool"
            kind="rust_binary"
            deps=["./Core"]

            [target.attrs]
            crate_name = "tool"

            [[target]]
            name = "Tool2"
            kind = "rust_library"
            srcs = ["t/*.rs"]

            [target.attrs]
            crate_name = "tool2"
        "##]],
    );
}

#[test]
fn delete_removes_the_target_with_its_sub_tables_and_comments() {
    check(
        vec![EditOperation::Delete {
            target_name: "Tool".into(),
        }],
        expect![[r##"
            # The package of odd formatting.
              # (indented comment)

            [[target]]   # the library
            name="Core"
            kind = "rust_library"   # trailing comment
            srcs = [
                "src/**/*.rs",  # all sources
            ]
            visibility = ['public']

            [target.attrs]
            # the crate name
            crate_name = "core"
            edition = "2021"    # pinned
        "##]],
    );
    check(
        vec![
            EditOperation::Delete {
                target_name: "Core".into(),
            },
            EditOperation::Update {
                target_name: "Tool".into(),
                set: vec![("deps".into(), None)],
            },
        ],
        expect![[r##"
            # The package of odd formatting.
              # (indented comment)

            # Two blank lines above.
            [[target]]
            name = "Tool"
            kind="rust_binary"

            [target.attrs]
            crate_name = "tool"
        "##]],
    );
}

#[test]
fn a_batch_whose_third_operation_fails_writes_nothing_and_says_why() {
    let (mut host, system) = host(ODD);
    let outcome = host
        .apply_edit(&EditRequest {
            package: "pkg".into(),
            operations: vec![
                EditOperation::Update {
                    target_name: "Core".into(),
                    set: vec![("srcs".into(), Some(list(&["lib/*.rs"])))],
                },
                EditOperation::Delete {
                    target_name: "Tool".into(),
                },
                EditOperation::Update {
                    target_name: "Core".into(),
                    set: vec![(
                        "attrs".into(),
                        Some(dict(&[("edition", AttrValue::Int(2021))])),
                    )],
                },
            ],
        })
        .unwrap();
    assert_eq!(
        read(&system, "pkg/once.toml"),
        odd_manifest(),
        "byte-identical"
    );
    let EditOutcome::Rejected {
        failed_operation,
        diagnostics,
        ..
    } = outcome
    else {
        panic!("accepted: {outcome:?}")
    };
    assert_eq!(failed_operation, Some(2));
    let messages: Vec<String> = diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.diagnostic.code, d.diagnostic.message))
        .collect();
    expect![[r#"
        [
            "attr_type_mismatch: operations[2] (update `Core`): attribute `edition` expects type `string`: expected a string, got int",
        ]
    "#]].assert_debug_eq(&messages);
}

#[test]
fn missing_targets_and_duplicate_names_are_rejected() {
    let (mut host, system) = host(ODD);
    for operations in [
        vec![EditOperation::Delete {
            target_name: "Cor".into(),
        }],
        vec![EditOperation::Create {
            target: dict(&[("name", s("Core")), ("kind", s("rust_library"))]),
            comment: None,
        }],
        vec![EditOperation::Update {
            target_name: "Tool".into(),
            set: vec![("name".into(), Some(s("Core")))],
        }],
        vec![EditOperation::Create {
            target: dict(&[("name", s("X")), ("kind", s("no_such_kind"))]),
            comment: None,
        }],
    ] {
        let outcome = host
            .apply_edit(&EditRequest {
                package: "pkg".into(),
                operations,
            })
            .unwrap();
        let EditOutcome::Rejected { diagnostics, .. } = outcome else {
            panic!("{outcome:?}")
        };
        assert!(!diagnostics.is_empty());
    }
    assert_eq!(read(&system, "pkg/once.toml"), odd_manifest());
}

#[test]
fn a_missing_manifest_is_created() {
    let (mut host, system) = host(EMPTY);
    let outcome = host
        .apply_edit(&EditRequest {
            package: "new/pkg".into(),
            operations: vec![EditOperation::Create {
                target: dict(&[
                    ("name", s("Data")),
                    ("kind", s("filegroup")),
                    ("srcs", list(&["*.txt"])),
                ]),
                comment: None,
            }],
        })
        .unwrap();
    assert!(
        matches!(&outcome, EditOutcome::Applied { path, changed: true, .. } if path == "new/pkg/once.toml"),
        "{outcome:?}"
    );
    expect![[r#"
        [[target]]
        name = "Data"
        kind = "filegroup"
        srcs = ["*.txt"]
    "#]]
    .assert_eq(&read(&system, "new/pkg/once.toml"));
    assert!(
        host.analysis()
            .packages()
            .unwrap()
            .contains(&"new/pkg".to_owned()),
        "the host sees the new package at once"
    );
}

#[test]
fn packages_outside_the_workspace_are_refused() {
    let (mut host, system) = host(ODD);
    system.symlink(format!("{ROOT}/escape"), "/etc");
    let create = || {
        vec![EditOperation::Create {
            target: dict(&[("name", s("X")), ("kind", s("filegroup"))]),
            comment: None,
        }]
    };
    for package in ["../x", "/etc", "pkg/../../x", "escape"] {
        let refused = host.apply_edit(&EditRequest {
            package: package.into(),
            operations: create(),
        });
        assert!(refused.is_err(), "{package}: {refused:?}");
    }
    assert!(!system.is_file(Path::new("/x/once.toml")));
    assert!(!system.is_file(Path::new("/etc/once.toml")));
    assert!(!system.is_file(Path::new("/ws/escape/once.toml")));
}

#[test]
fn every_starter_materializes_idempotently_and_conflicts_write_nothing() {
    let (probe, _) = host(EMPTY);
    let kinds = probe.analysis().kinds().unwrap();
    let mut checked = 0;
    for kind in &kinds {
        for example in &kind.examples {
            checked += 1;
            let system = MemorySystem::default();
            let mut host = AnalysisHost::load(Arc::new(system.clone()), PathBuf::from(ROOT));
            let what = format!("{}/{}", kind.name, example.slug);
            let first = host
                .materialize_example(&kind.name, &example.slug, "")
                .expect(&what);
            assert!(
                first.plan.conflicts.is_empty(),
                "{what}: {:?}",
                first.plan.conflicts
            );
            assert_eq!(first.plan.created.len(), example.files.len(), "{what}");
            let validation = first.validation.as_ref().expect("validated");
            assert!(
                validation.valid && validation.diagnostics.is_empty(),
                "{what}: {:?}",
                validation.diagnostics
            );
            assert!(
                first.targets.iter().any(|t| t.kind == kind.name),
                "{what}: no target of its kind"
            );

            let again = host
                .materialize_example(&kind.name, &example.slug, "")
                .expect(&what);
            assert!(
                again.plan.created.is_empty() && again.plan.conflicts.is_empty(),
                "{what}"
            );
            assert_eq!(again.plan.unchanged.len(), example.files.len(), "{what}");

            let changed = &example.files[0].path;
            system.write(format!("{ROOT}/{changed}"), "changed\n");
            let removed = example
                .files
                .last()
                .map(|f| f.path.clone())
                .filter(|p| p != changed);
            if let Some(removed) = &removed {
                system.remove(Path::new(&format!("{ROOT}/{removed}")));
            }
            let conflict = host
                .materialize_example(&kind.name, &example.slug, "")
                .expect(&what);
            assert_eq!(conflict.plan.conflicts.len(), 1, "{what}");
            assert!(conflict.validation.is_none() && conflict.plan.writes.is_empty());
            if let Some(removed) = &removed {
                assert!(
                    !system.is_file(Path::new(&format!("{ROOT}/{removed}"))),
                    "{what}: nothing written"
                );
            }
        }
    }
    assert!(checked > 10, "only {checked} starters");
}

#[test]
fn starters_relocate_under_a_destination() {
    let (mut host, system) = host(EMPTY);
    let done = host
        .materialize_example("rust_binary", "rust-binary-with-library", "apps/hello")
        .unwrap();
    assert!(done.plan.conflicts.is_empty());
    let validation = done.validation.unwrap();
    assert!(validation.valid, "{:?}", validation.diagnostics);
    let mut ids: Vec<String> = done.targets.iter().map(|t| t.id.clone()).collect();
    ids.sort();
    expect![[r#"
        (
            [
                "apps/hello/app/App",
                "apps/hello/lib/greeting/Greeting",
            ],
            "[[target]]\nname = \"App\"\nkind = \"rust_binary\"\nsrcs = [\"Cargo.toml\", \"src/**/*.rs\"]\n# Also a path dependency in app/Cargo.toml: Cargo builds it, once tracks the edge.\ndeps = [\"apps/hello/lib/greeting/Greeting\"]\n\n[target.attrs]\ncrate_name = \"app\"\nargs = [\"world\"]\n",
        )
    "#]].assert_debug_eq(&(ids, read(&system, "apps/hello/app/once.toml")));
    assert!(
        !system.is_file(Path::new("/ws/apps/hello/once.toml")),
        "the starter's `[workspace]` stays out"
    );
}

#[test]
fn materialize_destinations_outside_the_workspace_are_refused() {
    let (mut host, system) = host(EMPTY);
    system.symlink(format!("{ROOT}/out"), "/tmp");
    for destination in ["../x", "/etc", "a/../../x"] {
        assert!(
            host.materialize_example("filegroup", "filegroup-minimal", destination)
                .is_err(),
            "{destination}"
        );
    }
    let through_link = host
        .materialize_example("rust_binary", "rust-binary-minimal", "out")
        .unwrap();
    assert!(!through_link.plan.conflicts.is_empty());
    assert!(
        through_link
            .plan
            .conflicts
            .iter()
            .all(|(_, reason)| reason.contains("symbolic link"))
    );
    assert!(!system.is_file(Path::new("/ws/out/Cargo.toml")));
}

/// The text an edit writes for `x`, parsed back by the manifest parser.
fn float_round_trip(x: f64) -> (String, Result<f64, String>) {
    use once_syntax::value::ValueKind;
    let text = AttrValue::Float(once_model::Float(x)).to_string();
    let document = once_syntax::value::document(&once_syntax::parse(&format!("x = {text}\n")));
    let parsed = match (document.errors.first(), document.root.get("x")) {
        (Some(error), _) => Err(format!("{error:?}")),
        (None, Some(entry)) => match &entry.value.kind {
            ValueKind::Float(f) => Ok(f.0),
            other => Err(format!("read back as {other:?}")),
        },
        (None, None) => Err("no value".to_owned()),
    };
    (text, parsed)
}

#[test]
fn floats_written_by_edits_read_back_as_the_same_floats() {
    let special = [
        1e308,
        -1e308,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        1e16,
        1e15,
        123456789012345680.0,
        0.1,
        1.0,
        -0.0,
        0.0,
        2.5e-10,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    let shown: Vec<String> = special.iter().map(|x| float_round_trip(*x).0).collect();
    expect![[r#"1e308 -1e308 1.7976931348623157e308 2.2250738585072014e-308 5e-324 1e16 1000000000000000.0 1.2345678901234568e17 0.1 1.0 -0.0 0.0 2.5e-10 inf -inf nan"#]]
        .assert_eq(&shown.join(" "));
    // And a deterministic spread of bit patterns (xorshift), every one exact.
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let random = (0..20_000).map(|_| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        f64::from_bits(state)
    });
    for x in special.into_iter().chain(random) {
        let (text, parsed) = float_round_trip(x);
        match parsed {
            Ok(y) if y.to_bits() == x.to_bits() || (x.is_nan() && y.is_nan()) => {}
            other => panic!("{x:e} written as `{text}` reads back as {other:?}"),
        }
    }
}
