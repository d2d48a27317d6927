//! Who is calling, proven: bearer tokens, claims mapping, the signed
//! identity handed to tools, and a fuzz of token shapes.

mod bearer_tokens;
mod claims_mapping;
mod fuzz_tokens;
mod identity_header;
