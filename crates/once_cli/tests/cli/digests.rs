//! `once query target ID --format json` shows `input_digest`, which follows the contents of
//! the target's inputs, and `once query inputs` lists every target's inputs with the same
//! digest; processes share the digest index in `.once/digests`, and several running at
//! once leave a complete one.

use crate::support::{Once, Workspace};

const TARGET: &str = "apps/greeter/Greeter";

fn input_digest(workspace: &Workspace) -> String {
    let outcome = Once::at(workspace, &["query", "target", TARGET, "--format", "json"]).run();
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let digest = outcome.json()["input_digest"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(digest.len(), 64, "{}", outcome.stdout);
    assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()));
    digest
}

/// Whether the index text is complete: the version line, entries, and the checksum
/// line (`once_db::framed`).
fn is_complete_index(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    lines.len() >= 2
        && lines[0] == "once-digest-index 2"
        && lines[lines.len() - 1].starts_with("checksum ")
        && lines[lines.len() - 1].len() == "checksum ".len() + 64
}

/// A copy of the demo whose files changed longer ago than the digest index's settling
/// time (a digest read sooner after a change is not kept: `once_db::digests`).
fn settled_demo() -> Workspace {
    let demo = Workspace::copy("demo");
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    demo
}

#[test]
fn input_digest_follows_the_contents_of_the_inputs() {
    let demo = settled_demo();
    let first = input_digest(&demo);
    let index = demo.root().join(".once/digests");
    let text = std::fs::read_to_string(&index).unwrap_or_default();
    assert!(is_complete_index(&text), "{text}");
    assert!(text.contains(" apps/greeter/src/main.rs\n"), "{text}");
    assert_eq!(input_digest(&demo), first, "nothing changed");

    let main = demo.root().join("apps/greeter/src/main.rs");
    let original = std::fs::read_to_string(&main).expect("main.rs");
    demo.write(
        "apps/greeter/src/main.rs",
        &format!("{original}// edited\n"),
    );
    let edited = input_digest(&demo);
    assert_ne!(edited, first, "a source edit changes the input digest");
    // A file the target does not read changes nothing.
    demo.write("apps/greeter/notes.txt", "not an input\n");
    assert_eq!(input_digest(&demo), edited);
    demo.write("apps/greeter/src/main.rs", &original);
    assert_eq!(
        input_digest(&demo),
        first,
        "the digest is of contents alone"
    );
}

#[test]
fn processes_writing_the_index_at_once_leave_a_complete_one() {
    let demo = settled_demo();
    let expected = input_digest(&demo);
    let index = demo.root().join(".once/digests");
    for _ in 0..3 {
        let _ = std::fs::remove_file(&index);
        let digests: Vec<String> = std::thread::scope(|scope| {
            let runs: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| input_digest(&demo)))
                .collect();
            runs.into_iter()
                .map(|run| run.join().expect("a run panicked"))
                .collect()
        });
        assert!(digests.iter().all(|d| *d == expected), "{digests:?}");
        let text = std::fs::read_to_string(&index).unwrap_or_default();
        assert!(is_complete_index(&text), "{text}");
    }
}

#[test]
fn query_inputs_lists_every_target_with_the_digest_query_target_shows() {
    let demo = Workspace::copy("demo");
    let targets = Once::at(&demo, &["query", "targets", "--format", "json"]).run();
    assert_eq!(targets.code, 0, "{}", targets.stderr);
    let ids: Vec<String> = targets
        .json()
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["id"].as_str().map(str::to_owned))
        .collect();
    assert!(ids.len() > 3, "{}", targets.stdout);

    let inputs = Once::at(&demo, &["query", "inputs", "--format", "json"]).run();
    assert_eq!(inputs.code, 0, "{}", inputs.stderr);
    let answers = inputs.json();
    let listed: Vec<&str> = answers
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["id"].as_str())
        .collect();
    assert_eq!(listed, ids, "every target, in the order of `query targets`");
    let greeter = answers
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["id"] == TARGET)
        .cloned()
        .unwrap_or_default();
    assert_eq!(greeter["input_digest"], input_digest(&demo).as_str());
    let paths: Vec<&str> = greeter["inputs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["path"].as_str())
        .collect();
    assert!(paths.contains(&"apps/greeter/src/main.rs"), "{paths:?}");
    assert!(paths.contains(&"apps/greeter/once.toml"), "{paths:?}");
    let mut sorted = paths.clone();
    sorted.sort_unstable();
    assert_eq!(paths, sorted, "inputs are sorted by path");
}
