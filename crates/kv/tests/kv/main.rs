//! The key-value promise: the conformance suite on the in-memory store and
//! through the fault-injecting wrapper.

mod faulty_conformance;
mod memory_conformance;
