"""The gRPC API's messages and methods, made at import from the descriptors the extension module
carries (``patience._patience.DESCRIPTORS``, compiled from the repository's proto/ when the wheel
is built): the client always speaks the API of the build it came with, and no generated code is
checked in or needs grpcio-tools to build.

``patience`` and ``jobs`` stand where generated ``patience_pb2`` and ``jobs_pb2`` modules would:
each message class and enum by its name, and each enum value by its name (``jobs.JOB_STATE_QUEUED``).
"""

from types import SimpleNamespace

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from patience._patience import DESCRIPTORS

PACKAGE = "patience.v1"

_files = descriptor_pb2.FileDescriptorSet.FromString(DESCRIPTORS).file
# A pool of our own (the default one may hold another build's patience.v1), which GetMessages
# fills with the files, their dependencies first.
_pool = descriptor_pool.DescriptorPool()
_classes = message_factory.GetMessages(list(_files), pool=_pool)


def _module(proto):
    """What a generated ``*_pb2`` module of ``proto`` holds: its messages, enums and enum values."""
    file = _pool.FindFileByName(proto)
    names = {}
    for name, message in file.message_types_by_name.items():
        names[name] = _classes[message.full_name]
    for name, enum in file.enum_types_by_name.items():
        names[name] = EnumTypeWrapper(enum)
        names.update((value.name, value.number) for value in enum.values)
    return SimpleNamespace(**names)


patience = _module("patience/v1/patience.proto")
jobs = _module("patience/v1/jobs.proto")


def method(channel, service, name):
    """A callable for ``/patience.v1.SERVICE/NAME`` on ``channel``, of the kind its streaming
    says (what a generated stub's attribute would be)."""
    found = _pool.FindServiceByName(f"{PACKAGE}.{service}").methods_by_name[name]
    kind = (
        ("stream_" if found.client_streaming else "unary_")
        + ("stream" if found.server_streaming else "unary")
    )
    return getattr(channel, kind)(
        f"/{PACKAGE}.{service}/{name}",
        request_serializer=_classes[found.input_type.full_name].SerializeToString,
        response_deserializer=_classes[found.output_type.full_name].FromString,
    )


def stub(channel, service):
    """Every method of ``patience.v1.SERVICE`` on ``channel``, by name (a generated stub)."""
    methods = _pool.FindServiceByName(f"{PACKAGE}.{service}").methods_by_name
    return SimpleNamespace(**{name: method(channel, service, name) for name in methods})
