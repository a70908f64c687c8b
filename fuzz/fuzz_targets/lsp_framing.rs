//! libFuzzer entry point of the `lsp_framing` target: `once_fuzz::lsp_framing` (its properties are
//! documented there and in docs/fuzzing.md).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| once_fuzz::lsp_framing(data));
