//! A gRPC health probe: one `grpc.health.v1.Health/Check` of one daemon within a time limit,
//! connecting included, as `patience health` (and so the container image's HEALTHCHECK) asks it.

use std::time::Duration;

use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use super::connect::{ConnectError, Connector, Daemon};
use crate::auth::AddBearer;

/// Why the probe could not ask.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Address(#[from] ConnectError),
    #[error("cannot connect to {0}")]
    Connect(String, #[source] tonic::transport::Error),
    #[error("{0} did not answer within {1:?}")]
    Timeout(String, Duration),
    #[error("{0} answered the health check with {code:?}: {message}", code = .1.code(), message = .1.message())]
    Refused(String, tonic::Status),
}

/// Asks the daemon at `url` (`http://` or `https://`) how `service` is (`""`: the daemon as a whole), within `timeout`.
/// A service the daemon does not know is [`ServingStatus::ServiceUnknown`], as a health `Watch`
/// would say (a `Check` says so with `NOT_FOUND`).
pub async fn probe(
    url: &str,
    connector: &Connector,
    bearer: AddBearer,
    service: &str,
    timeout: Duration,
) -> Result<ServingStatus, ProbeError> {
    let url = url.to_string();
    let endpoint = connector.endpoint(&Daemon::Url(url.clone()))?;
    let ask = async {
        let channel = endpoint
            .connect()
            .await
            .map_err(|e| ProbeError::Connect(url.clone(), e))?;
        let mut client = HealthClient::with_interceptor(channel, bearer);
        let request = HealthCheckRequest {
            service: service.to_string(),
        };
        // The whole probe is under `timeout` (below); tonic's own deadline would end it as
        // CANCELLED instead, which reads as an answer.
        match client.check(request).await {
            Ok(response) => Ok(response.into_inner().status()),
            Err(status) if status.code() == tonic::Code::NotFound => {
                Ok(ServingStatus::ServiceUnknown)
            }
            Err(status) => Err(ProbeError::Refused(url.clone(), status)),
        }
    };
    tokio::time::timeout(timeout, ask)
        .await
        .unwrap_or_else(|_| Err(ProbeError::Timeout(url.clone(), timeout)))
}
