//! The same store on a real Redis Cluster (3 primaries, 3 replicas on
//! loopback): the whole conformance suite, the slot rule checked against
//! the server, the shape it opens on, and what happens while slots move
//! and a primary fails over.

mod a_batch_across_slots_is_refused_before_sending_and_nothing_is_written;
mod a_failover_loses_no_acknowledged_write_when_a_replica_confirms_each;
mod a_write_no_replica_confirms_in_time_is_refused_and_counted;
mod conformance;
mod every_write_during_a_live_reshard_lands_exactly_once;
mod slots_agree_with_the_server_for_every_key_the_store_writes;
mod the_store_opens_only_on_a_whole_cluster_and_reports_its_shape;
