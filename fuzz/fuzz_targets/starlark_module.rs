//! libFuzzer entry point of the `starlark_module` target: `once_fuzz::starlark_module` (its properties are
//! documented there and in docs/fuzzing.md).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| once_fuzz::starlark_module(data));
