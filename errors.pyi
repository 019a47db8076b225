"""Types of busca.errors: BuscaError and every error class, re-exported (errors.py loads
them on first use)."""

from .crawler.errors import ApiRefused as ApiRefused
from .crawler.errors import ApiUnusable as ApiUnusable
from .index.dense.embedding_api import AuthFailed as AuthFailed
from .index.backend import BackendUnavailable as BackendUnavailable
from .crawler.store import BadDocument as BadDocument
from .search.filters import BadFilter as BadFilter
from .search.hits import BadFloor as BadFloor
from .crawler.groups import BadGroup as BadGroup
from .index.dense.dense_groups import BadGroups as BadGroups
from .serve.hosts import BadHostName as BadHostName
from .search.hits import BadJson as BadJson
from .index.dense.dense_models import BadModelList as BadModelList
from .serve.hosts import BadOrigin as BadOrigin
from .serve.errors import BadParameter as BadParameter
from .search.collapse import BadPerDoc as BadPerDoc
from .index.dense.embedding_api import BadResponse as BadResponse
from .corpus.specs import BadSpec as BadSpec
from .index.text.titles import BadTitles as BadTitles
from .serve.access import BadTokens as BadTokens
from .index.dense.dense import BadVectors as BadVectors
from .index.text.chunking import BadWindow as BadWindow
from .index.dense.embedding_api import BatchTooLarge as BatchTooLarge
from .index.lexical.bm25 import Bm25ParameterError as Bm25ParameterError
from .serve.app import BodyTooLarge as BodyTooLarge
from .index.home.buildlock import BuildLocked as BuildLocked
from .serve.errors import BuildRunning as BuildRunning
from .index.dense.vector_cache import CacheError as CacheError
from .index.text.chunking import ChunkingError as ChunkingError
from .crawler.errors import ConnectFailed as ConnectFailed
from .search.context import ContextTooSmall as ContextTooSmall
from .index.postgres.schema import CorpusNotFound as CorpusNotFound
from .crawler.errors import CrawlError as CrawlError
from .crawler.errors import CrawlStopped as CrawlStopped
from .index.dense.vector_cache import DimensionChanged as DimensionChanged
from .crawler.errors import Disallowed as Disallowed
from .index.home.diskfull import DiskFull as DiskFull
from .index.dense.embedding_api import EmbeddingServerError as EmbeddingServerError
from .index.dense.vectors import EmptyQuery as EmptyQuery
from .index.text.counting import EmptyVocabulary as EmptyVocabulary
from .index.dense.encoders import EncoderError as EncoderError
from .index.dense.vectors import EncoderMismatch as EncoderMismatch
from .index.dense.encoders import EncoderMissing as EncoderMissing
from .crawler.errors import FetchError as FetchError
from .integrations.langchain import FiltersNotSupported as FiltersNotSupported
from .search.eval.floors import FloorError as FloorError
from .search.fusion import FusionError as FusionError
from .search.eval.golden import GoldenError as GoldenError
from .index.home.storage import HomeNotFound as HomeNotFound
from .serve.errors import HttpError as HttpError
from .index.home.storage import IndexFormatError as IndexFormatError
from .index.home.storage import IndexNotFound as IndexNotFound
from .search.eval.metrics import MetricError as MetricError
from .index.dense.encoders import MissingServer as MissingServer
from .index.text.analyzers import MissingStemmer as MissingStemmer
from .index.dense.openai_encoder import ModelChanged as ModelChanged
from .index.dense.e5_weights import ModelFileError as ModelFileError
from .index.dense.encoders import ModelNotFound as ModelNotFound
from .search.eval.floors import NoFloorToStore as NoFloorToStore
from .index.lexical.lexical import NoSearchableTerms as NoSearchableTerms
from .search.eval.harness import NothingRelevant as NothingRelevant
from .index.build import NothingToIndex as NothingToIndex
from .serve.client import NotServed as NotServed
from .index.dense.vectors import NoVectors as NoVectors
from .crawler.errors import OffSite as OffSite
from .crawler.pdf import PdfError as PdfError
from .search.eval.plots import PlotUnavailable as PlotUnavailable
from .index.postgres.schema import PostgresDamaged as PostgresDamaged
from .index.postgres.conn import PostgresDenied as PostgresDenied
from .index.postgres.schema import PostgresError as PostgresError
from .index.postgres.schema import PostgresFormatError as PostgresFormatError
from .index.postgres.conn import PostgresMissingTable as PostgresMissingTable
from .index.postgres.schema import PostgresOldFormat as PostgresOldFormat
from .index.postgres.conn import PostgresReadOnly as PostgresReadOnly
from .index.postgres.conn import PostgresUnavailable as PostgresUnavailable
from .index.home.documents import ReadOnlyHome as ReadOnlyHome
from .index.dense.rerank_api import RerankError as RerankError
from .search.eval.runs import RunError as RunError
from .index.dense.e5_sae import SaeFileError as SaeFileError
from .search.eval.scope import ScopeError as ScopeError
from .index.dense.embedding_api import ServerUnreachable as ServerUnreachable
from .shell import SessionError as SessionError
from .index.postgres.home import StaleBuild as StaleBuild
from .search.hits import StaleIndex as StaleIndex
from .index.home.documents import StoreDamaged as StoreDamaged
from .crawler.store import StoreError as StoreError
from .search.context import TemplateError as TemplateError
from .crawler.errors import TooLarge as TooLarge
from .crawler.errors import TooSlow as TooSlow
from .serve.access import Unauthorized as Unauthorized
from .index.text.analyzers import UnknownAnalyzer as UnknownAnalyzer
from .index.dense.encoders import UnknownEncoder as UnknownEncoder
from .search.eval.scope import UnknownField as UnknownField
from .index.methods import UnknownMethod as UnknownMethod
from .index.dense.embedding_api import UnknownModel as UnknownModel
from .corpus.specs import UnknownOption as UnknownOption


class BuscaError(Exception): ...


WHERE: dict[str, str]
__all__: list[str]
