//! Crashes and outages: SIGKILL during writes, NATS stopped during writes.

use crate::helpers::{Deployment, NatsServer, Writers, assert_nothing_lost_or_doubled, create_org, shared_nats_url};
use sqlx::PgPool;
use std::sync::atomic::Ordering;

#[sqlx::test(migrations = "../schema")]
async fn sigkill_during_writes_loses_and_doubles_nothing(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    let (_, key) = create_org(&deployment, "Kill Test");
    let service = deployment.start().await;
    let writers = Writers::start(&deployment.base(), &key, 8);
    writers.wait_for_acked(150).await;
    service.kill();
    let acked_before_restart = writers.acked_count().await;
    let _service = deployment.start().await;
    writers.wait_for_acked(acked_before_restart + 100).await;
    let acked = writers.finish().await;
    assert_nothing_lost_or_doubled(&pool, &deployment, &key, &acked).await;
    deployment.delete_stream().await;
}

/// SIGTERM (`docker stop`, systemd, Kubernetes) stops the service cleanly: exit code 0, as an interrupt.
/// Before, only an interrupt was watched, so SIGTERM killed it mid-flight with the signal's status.
#[sqlx::test(migrations = "../schema")]
async fn sigterm_stops_the_service_with_exit_code_zero(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    let service = deployment.start().await;
    let status = service.terminate().await;
    assert_eq!(status.code(), Some(0), "{status:?}");
    deployment.delete_stream().await;
}

#[sqlx::test(migrations = "../schema")]
async fn a_nats_outage_loses_nothing_and_heals_without_a_restart(pool: PgPool) {
    let mut nats = NatsServer::start().await;
    let deployment = Deployment::new(&pool, &nats.url());
    let (_, key) = create_org(&deployment, "Outage Test");
    let _service = deployment.start().await;
    let writers = Writers::start(&deployment.base(), &key, 6);
    writers.wait_for_acked(100).await;

    nats.stop();
    let refused_before = writers.refused.load(Ordering::Relaxed);
    crate::helpers::eventually("writes are refused while NATS is away", || async {
        writers.refused.load(Ordering::Relaxed) > refused_before + 20
    })
    .await;
    let acked_during_outage = writers.acked_count().await;

    nats.restart().await;
    // The same process recovers by itself.
    writers.wait_for_acked(acked_during_outage + 100).await;
    let acked = writers.finish().await;
    assert_nothing_lost_or_doubled(&pool, &deployment, &key, &acked).await;
}
