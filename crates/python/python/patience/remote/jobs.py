"""Jobs a daemon runs (`patience serve --jobs-dir`, `patience.v1.JobService`): submit one, watch
it to its end, get, list (page by page), cancel and delete them. A job names its inputs and its output as paths under
the daemon's --jobs-dir or as s3:// objects; the daemon reads and writes them itself, so nothing
but the job's spec and its progress crosses the wire.

    from patience.remote import jobs
    job = jobs.submit("http://127.0.0.1:50051", ["deals.in"], "answers.txt", job_id="nightly")
    for job in jobs.watch("http://127.0.0.1:50051", job.job_id):
        print(jobs.STATES[job.state], job.items_done)

A refusal raises `RpcFailure` with its reason (JOB_INVALID, JOB_PRECONDITION, JOB_NOT_FOUND,
MAX_QUEUED_JOBS).
"""

from typing import Iterator, Optional, Sequence

import grpc

from . import proto as _proto
from .client import RpcFailure, _channel

# A state's short name, by its number.
STATES = {
    _proto.jobs.JOB_STATE_QUEUED: "queued",
    _proto.jobs.JOB_STATE_RUNNING: "running",
    _proto.jobs.JOB_STATE_SUCCEEDED: "succeeded",
    _proto.jobs.JOB_STATE_FAILED: "failed",
    _proto.jobs.JOB_STATE_CANCELLED: "cancelled",
}
ENDED = {_proto.jobs.JOB_STATE_SUCCEEDED, _proto.jobs.JOB_STATE_FAILED, _proto.jobs.JOB_STATE_CANCELLED}


def _stub(addr, token, tls_ca, tls_cert, tls_key):
    channel = _channel(addr, tls_ca, tls_cert, tls_key, False)
    metadata = [("authorization", f"Bearer {token}")] if token else []
    return channel, _proto.stub(channel, "JobService"), metadata


def _call(addr, method, request, metadata):
    try:
        return method(request, metadata=metadata)
    except grpc.RpcError as error:
        raise RpcFailure.from_error(addr, error) from None


FORMATS = {
    "text": _proto.jobs.JOB_FORMAT_TEXT,
    "json": _proto.jobs.JOB_FORMAT_JSON,
    "parquet": _proto.jobs.JOB_FORMAT_PARQUET,
}


def submit(addr: str, inputs: Sequence[str], output: str, job_id: str = "", rps: bool = False,
           json: bool = False, precision: Optional[int] = None, shard: str = "",
           token: Optional[str] = None, tls_ca=None, tls_cert=None, tls_key=None,
           format: Optional[str] = None) -> _proto.jobs.Job:
    """Creates a job (the same job_id and spec again is the same job) and returns it as it is.

    format is "text" (the default), "json" or "parquet" (one row per item: index, id,
    probability, error); json=True is format="json"."""
    chosen = format or ("json" if json else "text")
    if chosen not in FORMATS:
        raise ValueError(f"format {chosen!r} is not one of {', '.join(FORMATS)}")
    spec = _proto.jobs.JobSpec(
        inputs=[*inputs], output=output, shard=shard,
        game=_proto.jobs.JOB_GAME_RPS if rps else _proto.jobs.JOB_GAME_DEALS,
        format=FORMATS[chosen])
    if precision is not None:
        spec.precision = precision
    channel, stub, metadata = _stub(addr, token, tls_ca, tls_cert, tls_key)
    with channel:
        request = _proto.jobs.CreateJobRequest(job_id=job_id, spec=spec)
        return _call(addr, stub.CreateJob, request, metadata).job


def watch(addr: str, job_id: str, token: Optional[str] = None, tls_ca=None, tls_cert=None,
          tls_key=None) -> Iterator[_proto.jobs.Job]:
    """The job now and at each change (about once a second while it runs), to its end."""
    channel, stub, metadata = _stub(addr, token, tls_ca, tls_cert, tls_key)
    with channel:
        try:
            for update in stub.WatchJob(_proto.jobs.WatchJobRequest(job_id=job_id), metadata=metadata):
                yield update.job
        except grpc.RpcError as error:
            raise RpcFailure.from_error(addr, error) from None


def get(addr: str, job_id: str, token: Optional[str] = None, **tls) -> _proto.jobs.Job:
    channel, stub, metadata = _stub(addr, token, tls.get("tls_ca"), tls.get("tls_cert"), tls.get("tls_key"))
    with channel:
        return _call(addr, stub.GetJob, _proto.jobs.GetJobRequest(job_id=job_id), metadata).job


def list(addr: str, state: Optional[str] = None, page_size: int = 100, token: Optional[str] = None,
         **tls) -> Iterator[_proto.jobs.Job]:
    """Every job the daemon knows (those in `state`, a name of STATES, when given), oldest first,
    asked for `page_size` at a time."""
    states = {name: number for number, name in STATES.items()}
    if state is not None and state not in states:
        raise ValueError(f"state {state!r} is not one of {', '.join(states)}")
    channel, stub, metadata = _stub(addr, token, tls.get("tls_ca"), tls.get("tls_cert"), tls.get("tls_key"))
    with channel:
        request = _proto.jobs.ListJobsRequest(page_size=page_size, state=states.get(state, 0))
        while True:
            page = _call(addr, stub.ListJobs, request, metadata)
            yield from page.jobs
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token


def delete(addr: str, job_id: str, token: Optional[str] = None, **tls) -> _proto.jobs.Job:
    """Forgets an ended job (its output stays); RpcFailure JOB_PRECONDITION for a queued or
    running one."""
    channel, stub, metadata = _stub(addr, token, tls.get("tls_ca"), tls.get("tls_cert"), tls.get("tls_key"))
    with channel:
        return _call(addr, stub.DeleteJob, _proto.jobs.DeleteJobRequest(job_id=job_id), metadata).job


def cancel(addr: str, job_id: str, token: Optional[str] = None, **tls) -> _proto.jobs.Job:
    channel, stub, metadata = _stub(addr, token, tls.get("tls_ca"), tls.get("tls_cert"), tls.get("tls_key"))
    with channel:
        return _call(addr, stub.CancelJob, _proto.jobs.CancelJobRequest(job_id=job_id), metadata).job
