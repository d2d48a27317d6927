//! The Redis/Valkey backend's guarantees against a real `redis-server` on
//! loopback: the whole conformance suite, and one module per failure or
//! property the backend must get right; `on_a_cluster` does the same on a
//! real 3-primary, 3-replica Redis Cluster.

mod common;

mod a_hung_server_is_unavailable_after_the_io_timeout;
mod a_malformed_url_is_a_clear_error;
mod a_stopped_server_is_unavailable_and_the_store_recovers_after_restart;
mod a_write_whose_reply_is_lost_is_unavailable_never_success_or_conflict;
mod an_unreachable_server_at_open_is_unavailable_naming_the_address;
mod batches_across_tenants_run_as_one_script_and_get_many_keeps_order;
mod conformance;
mod every_call_waits_for_the_server;
mod increment_is_exact_across_the_whole_i64_range;
mod keys_of_one_tenant_share_a_hash_slot;
mod list_keys_agrees_with_the_memory_store_on_random_keys;
mod maxmemory_refuses_writes_as_full_and_reads_still_work;
mod measure_read_and_swap_cost_on_loopback;
mod on_a_cluster;
mod sweep_drops_old_markers_and_raises_the_floor_of_their_tenant_only;
mod two_stores_on_one_server_with_different_namespaces_do_not_see_each_other;
