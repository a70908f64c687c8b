//! Fuzz targets for everything in `once` that parses user or peer input, as plain
//! functions of bytes.
//!
//! Each target is `pub fn NAME(data: &[u8])`: it feeds `data` to one family of parsers
//! and checks properties that hold for every input, panicking only when one is violated
//! (a real bug). The same functions run in two harnesses:
//!
//! - `fuzz/` at the repository root: `cargo +nightly fuzz run NAME` (libFuzzer,
//!   coverage-guided), one `fuzz_targets/NAME.rs` per target;
//! - `tests/corpus.rs`: on stable, every target over its checked-in seed corpus
//!   (`fuzz/corpus/NAME/`) and then over seeded random mutations of the seeds, bounded
//!   by count and time, so `cargo test` (and CI) runs them without nightly.
//!
//! The targets, and what each checks (docs/fuzzing.md has the details):
//!
//! - [`manifest`]: the TOML parser and value reader (the lossless tree prints back byte
//!   for byte, error ranges lie in the text, the `toml` crate accepts exactly what we
//!   accept) and `once.toml` through a whole in-memory workspace: validation never
//!   panics, and a manifest with any error is never planned.
//! - [`mcp_framing`]: the MCP server over in-memory streams: every line gets at most one
//!   answer, every answer is a well-formed JSON-RPC response, bad input gets its error.
//! - [`lsp_framing`]: the LSP transport's frame reader and decoder, and the reader thread
//!   over in-memory streams: no panic, every input consumed, the size caps respected,
//!   every reply a well-framed JSON-RPC error.
//! - [`script_header`]: the `# once` header of an annotated script: ranges in the text,
//!   normalised workspace paths, and a script with an invalid header is never planned.
//! - [`test_results`]: every test-result parser, and the record the test adapter writes
//!   from what it parsed (also after merging retries and batches) passes the validator
//!   the reader applies.
//! - [`store_formats`]: every decoder of a file in the store or `.once/` (action records,
//!   record indexes, the plan memo and its values, last plans, the digest index, the
//!   evidence journal): no input makes a read panic, what decodes re-encodes to the same
//!   value, and where a format has an integrity check, no changed byte is accepted.
//! - [`starlark_module`]: a project module evaluated within small limits: no panic, the
//!   evaluation ends within its deadline, and the result is well-formed.

mod lsp;
mod manifest;
mod mcp;
pub mod mutate;
mod output;
mod scratch;
mod script;
mod starlark;
mod store;
mod test_results;

pub use lsp::lsp_framing;
pub use manifest::manifest;
pub use mcp::mcp_framing;
pub use script::script_header;
pub use starlark::starlark_module;
pub use store::store_formats;
pub use test_results::test_results;

/// A fuzz target: one family of parsers fed with `data`; panics only on a property
/// violation.
pub type Target = fn(&[u8]);

/// Every target by name, in the order docs/fuzzing.md lists them. The names are those of
/// `fuzz/fuzz_targets/NAME.rs` and of the seed corpora `fuzz/corpus/NAME/`.
pub const TARGETS: &[(&str, Target)] = &[
    ("manifest", manifest),
    ("mcp_framing", mcp_framing),
    ("lsp_framing", lsp_framing),
    ("script_header", script_header),
    ("test_results", test_results),
    ("store_formats", store_formats),
    ("starlark_module", starlark_module),
];

/// Checks that `range` (a byte range reported for `text`) lies inside it, on character
/// boundaries, with its start before its end; `what` names the reporter in the panic.
pub(crate) fn check_range(text: &str, start: usize, end: usize, what: &dyn std::fmt::Display) {
    assert!(
        start <= end && end <= text.len(),
        "{what}: range {start}..{end} outside the {} bytes of the text",
        text.len()
    );
    assert!(
        text.is_char_boundary(start) && text.is_char_boundary(end),
        "{what}: range {start}..{end} splits a character"
    );
}

/// [`check_range`] for a `once_model` range (diagnostics, fixes, directives).
pub(crate) fn check_model_range(
    text: &str,
    range: once_model::TextRange,
    what: &dyn std::fmt::Display,
) {
    check_range(text, range.start as usize, range.end as usize, what);
}

/// Checks a diagnostic's range and its fixes' edits in `text`: inside the text, and the
/// edits of one fix sorted and not overlapping (what applying them needs).
pub(crate) fn check_diagnostic(text: &str, diagnostic: &once_model::Diagnostic) {
    let what = format!("{} ({})", diagnostic.code, diagnostic.message);
    if let Some(range) = diagnostic.range {
        check_model_range(text, range, &what);
    }
    for fix in &diagnostic.fixes {
        let mut previous_end = 0;
        for edit in &fix.edits {
            check_model_range(
                text,
                edit.range,
                &format_args!("{what}: the fix `{}`", fix.title),
            );
            assert!(
                edit.range.start >= previous_end,
                "{what}: the edits of the fix `{}` overlap or are not sorted",
                fix.title
            );
            previous_end = edit.range.end;
        }
    }
}
