//! Every call is a round trip to the server, so a host runs each one on a
//! thread made for waiting (`Store::waits`), reads as well as writes.

use crate::common::Server;
use cairn_kv::{Store, Waits};

#[test]
fn every_call_waits_for_the_server() {
    let server = Server::start();
    let store = server.store("waits");
    assert_eq!(store.waits(), Waits::Always);
    assert!(store.waits().call(true) && store.waits().call(false));
}
