//! Host side of `fermyon:spin/variables@2.0.0`: a component reads the
//! variables its manifest entry declares, resolved once at startup
//! ([`crate::variables`]).

use crate::bindings::fermyon::spin::variables::{Error, Host};
use crate::instance::Ctx;

impl Host for Ctx {
    fn get(&mut self, name: String) -> wasmtime::Result<Result<String, Error>> {
        crate::metrics::variable_read();
        if crate::manifest::valid_id(&name, '_').is_err() || name.chars().any(|c| c.is_ascii_uppercase()) {
            return Ok(Err(Error::InvalidName(name)));
        }
        Ok(self.variables.get(&name).cloned().ok_or(Error::Undefined(name)))
    }
}
