//! libFuzzer entry point of the `mcp_framing` target: `once_fuzz::mcp_framing` (its properties are
//! documented there and in docs/fuzzing.md).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| once_fuzz::mcp_framing(data));
