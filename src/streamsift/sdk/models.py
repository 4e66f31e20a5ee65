"""What the API answers, as typed SDK objects: the API's own models (streamsift.wire).

The SDK reads each answer into the class the server answered it with, so the two cannot
drift; the names here are the SDK's (what `Client`'s methods are annotated with). Answers are
frozen, and fields a newer server adds are ignored, so an older SDK reads a newer server.
"""

from __future__ import annotations

from streamsift.wire.alerts import AlertEpisodeModel as AlertEpisode
from streamsift.wire.dead_letters import (
    ConsumedLetters,
    DeadLetterPage,
    DlqClassCount,
    DlqStats,
    FirstFailure,
    PurgeResult,
    ReplayFailureCount,
    ReplayResult,
)
from streamsift.wire.dead_letters import DeadLetterModel as DeadLetter
from streamsift.wire.helpers import (
    ClickHouseTestResult,
    InferResult,
    KafkaTestResult,
    SampleResult,
    ValidateResult,
)
from streamsift.wire.helpers import ColumnModel as Column
from streamsift.wire.helpers import EventTimeCandidateModel as EventTimeCandidate
from streamsift.wire.helpers import ExpressionCheckResult as ExpressionCheck
from streamsift.wire.helpers import ExpressionValueResult as ExpressionValue
from streamsift.wire.helpers import InferredFieldModel as InferredField
from streamsift.wire.helpers import SampleMessageModel as SampleMessage
from streamsift.wire.helpers import TopicModel as Topic
from streamsift.wire.pipelines import DesiredState, State
from streamsift.wire.pipelines import PipelineModel as PipelineRecord
from streamsift.wire.pipelines import PipelineStatusModel as PipelineStatus
from streamsift.wire.pipelines import StatusChangeModel as StatusChange
from streamsift.wire.pipelines import TableRowsModel as TableRows

__all__ = [
    "AlertEpisode",
    "ClickHouseTestResult",
    "Column",
    "ConsumedLetters",
    "DeadLetter",
    "DeadLetterPage",
    "DesiredState",
    "DlqClassCount",
    "DlqStats",
    "EventTimeCandidate",
    "ExpressionCheck",
    "ExpressionValue",
    "FirstFailure",
    "InferResult",
    "InferredField",
    "KafkaTestResult",
    "PipelineRecord",
    "PipelineStatus",
    "PurgeResult",
    "ReplayFailureCount",
    "ReplayResult",
    "SampleMessage",
    "SampleResult",
    "State",
    "StatusChange",
    "TableRows",
    "Topic",
    "ValidateResult",
]
