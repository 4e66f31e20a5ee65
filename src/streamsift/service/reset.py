"""`reset_state`: dropping a pipeline's checkpoint, and only what the pipeline owns.

An edit with `reset_state` starts a pipeline afresh: its offsets, dedup/join state and
lifetime counts (all in the checkpoint) go. A document may name its own `checkpoint_dir`, so
the directory is deleted only when it is inside the server's roots, below (not at) one, and
holds none of the service's own places nor any other pipeline's.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.models import Pipeline
from streamsift.service.database import ServiceDatabase
from streamsift.service.document_policy import DocumentPolicy
from streamsift.service.supervisor import Supervisor


@dataclass(frozen=True)
class ServicePlaces:
    """What tells the service's places from a pipeline's: its data dir, what documents may
    name, its pipelines, and their workers' directories."""

    data_dir: Path
    policy: DocumentPolicy
    database: ServiceDatabase
    supervisor: Supervisor


def reset_checkpoint(places: ServicePlaces, pipeline_id: str, current: Pipeline) -> None:
    """Drop the pipeline's checkpoint (and its last status), if the pipeline owns it."""
    directory = places.supervisor.directory(pipeline_id)
    checkpoint = current.checkpoint_dir(directory).resolve()
    if not owned(places, checkpoint, {pipeline_id: current}):
        raise ConfigError(
            f"runtime.checkpoint_dir: {checkpoint} is not a directory this pipeline owns; "
            "reset_state deletes only a checkpoint inside the server's directories that "
            "holds nothing else (remove it by hand, or give the pipeline its own "
            "checkpoint_dir)"
        )
    shutil.rmtree(checkpoint, ignore_errors=True)
    (directory / "status.json").unlink(missing_ok=True)


def owned(places: ServicePlaces, checkpoint: Path, parsed: dict[str, Pipeline]) -> bool:
    """Whether reset_state may delete `checkpoint`: inside a root, below (not at) it, and
    holding none of the service's own places nor any other place a pipeline keeps (its
    directory, another's checkpoint, an embedded ClickHouse). `parsed`: the models of
    pipelines the caller has already (by id)."""
    policy, database, supervisor = places.policy, places.database, places.supervisor
    if not policy.inside(checkpoint) or checkpoint in policy.roots:
        return False
    protected = [places.data_dir, supervisor.pipelines_dir]
    protected += [places.data_dir / name for name in ("endpoints", "glassflow")]
    for record in database.list():
        directory = supervisor.directory(record.id)
        protected.append(directory)
        with contextlib.suppress(ConfigError):
            kept = parsed.get(record.id) or parse_pipeline(database.document(record.id))
            if kept.sink.clickhouse.path is not None:
                protected.append(kept.sink.clickhouse.path)
            if kept.checkpoint_dir(directory).resolve() != checkpoint:
                protected.append(kept.checkpoint_dir(directory))
    places = (Path(p).resolve() for p in protected)
    return not any(place == checkpoint or place.is_relative_to(checkpoint) for place in places)
