//! Real processes on PostgreSQL: one credentials service and two provisioner replicas,
//! started and killed (`SIGKILL`) for real. Skipped without `LEVELRAIL_TEST_POSTGRES_URL`.
mod crash;
mod harness;
