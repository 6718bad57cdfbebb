//! What every request passes through on its way to a service, outermost first: the count of
//! requests that are no gRPC call (`http_metrics.rs`); the front, which routes by protocol
//! (`front.rs`); the plain HTTP API's requests (`api.rs`: entered in the call layer, made on the
//! service directly); each gRPC call's life (`call.rs`: for the solving services the token check,
//! then admission, so a call without the token takes no cap; counted; framed with `frames.rs`;
//! routed to its service by its path); the services, tonic's servers.

use tonic::server::NamedService;
use tonic_health::pb::health_server::{Health, HealthServer};

use super::api::ApiSettings;
use super::call::{Calls, FrameSettings, Gate, Served};
use super::front::Front;
use super::http_metrics::HttpMetrics;
use super::route::Route;
use super::{ServerConfig, ServerError};
use crate::auth::{Caller, RequireBearer};
use crate::metrics::Metrics;
use crate::proto::job_service_server::JobServiceServer;
use crate::proto::rps_service_server::RpsServiceServer;
use crate::proto::solver_server::SolverServer;
use crate::service::jobs::JobsService;
use crate::service::{Admission, SolverService};

/// The whole stack, served on every connection.
pub type App = HttpMetrics<Front>;

pub fn build(
    config: &ServerConfig,
    service: SolverService,
    jobs: JobsService,
    admission: &Admission,
    health: HealthServer<impl Health>,
    metrics: &Metrics,
) -> Result<App, ServerError> {
    // grpcurl speaks only v1alpha, buf curl v1: serve both.
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection().build_v1()?;
    let reflection_v1alpha = reflection().build_v1alpha()?;
    // Every service served, by the descriptors that name its methods and their kinds: the
    // solving ones behind the token and their caps, health and reflection under the watches' cap.
    // tonic's message limit is only a backstop: the call layer holds request messages to it
    // first, with the status that names the flag, and decompresses them itself.
    let limit = config.limits.max_message_bytes;
    let mut served = vec![
        Served::new(
            SolverServer::<SolverService>::NAME,
            Route::new(
                SolverServer::new(service.clone())
                    .max_decoding_message_size(limit)
                    .max_encoding_message_size(usize::MAX),
            ),
            crate::proto::FILE_DESCRIPTOR_SET,
            true,
        )?,
        Served::new(
            RpsServiceServer::<SolverService>::NAME,
            Route::new(
                RpsServiceServer::new(service.clone())
                    .max_decoding_message_size(limit)
                    .max_encoding_message_size(usize::MAX),
            ),
            crate::proto::FILE_DESCRIPTOR_SET,
            true,
        )?,
        Served::new(
            name_of(&health),
            Route::new(health),
            tonic_health::pb::FILE_DESCRIPTOR_SET,
            false,
        )?,
        Served::new(
            name_of(&reflection_v1),
            Route::new(reflection_v1),
            tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
            false,
        )?,
        Served::new(
            name_of(&reflection_v1alpha),
            Route::new(reflection_v1alpha),
            tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
            false,
        )?,
    ];
    // The jobs, behind the token as the solving services are (WatchJob under the streams' cap);
    // without --jobs-dir each call says so.
    served.push(Served::new(
        JobServiceServer::<JobsService>::NAME,
        Route::new(JobServiceServer::new(jobs.clone())),
        crate::proto::FILE_DESCRIPTOR_SET,
        true,
    )?);
    // Every gRPC call's life owned by one layer, which routes it to its service by its path: the
    // token and admission first, counted as go-grpc-prometheus counts it, refused ones included,
    // its messages framed (held to the limit, decompressed, compressed); under the front, so
    // gRPC-Web calls pass it too (as tonic-web hands them on, translated to gRPC).
    let grpc = Calls::new(
        metrics,
        &served,
        FrameSettings {
            max_message_bytes: limit,
            compress_min_bytes: config.compress_min_bytes,
        },
        Gate {
            bearer: match config.tenants.is_empty() {
                true => RequireBearer::new(config.auth_token.as_ref(), metrics.clone()),
                false => RequireBearer::of(
                    config
                        .tenants
                        .iter()
                        .map(|t| (t.token.clone(), Caller::new(&t.name)))
                        .collect(),
                    metrics.clone(),
                ),
            },
            admission: admission.clone(),
        },
    )?;
    let grpc_paths: Vec<String> = grpc.paths().map(str::to_string).collect();
    // The plain HTTP API's calls are entered in the same layer, as calls of SolveStream
    // (SolveRpsStream): the same token, caps, drain and series; then made on the service
    // directly, their messages never encoded.
    let api = super::api::route(
        grpc.clone(),
        service,
        jobs,
        ApiSettings {
            max_items_per_request: config.limits.max_deals_per_request,
            max_in_flight: config.limits.max_in_flight,
        },
    );
    let grpc = Route::new(grpc);
    let page = config.ui.then(super::ui::route);
    let front = Front::new(grpc, api, page, &config.cors_allow_origins);
    Ok(HttpMetrics::new(front, metrics, grpc_paths))
}

/// The gRPC name of a service (`grpc.health.v1.Health`).
fn name_of<S: NamedService>(_: &S) -> &'static str {
    S::NAME
}
