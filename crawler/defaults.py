"""Crawl defaults, with no imports of the crawling code: the command line shows them in its
options without loading requests or bs4. The table of sources is here for that reason;
crawler/registry.py finds and runs them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..version import __version__

# The sources busca can read a site through (crawler/registry.py finds and runs them).
BUILTIN = "busca.crawler.builtin"


@dataclass(frozen=True)
class Source:
    """A named way to read a site: its module, and what it reads (for help and docs)."""

    name: str
    module: str
    reads: str
    endpoint_given: bool = False  # the crawl URL is the endpoint itself: no discovery


SOURCE_TABLE = (
    Source("wordpress", BUILTIN, "the WordPress REST API (/wp-json/wp/v2/posts)"),
    Source("mediawiki", "busca.crawler.platforms.mediawiki",
           "MediaWiki's api.php (generator=allpages, continue)"),
    Source("drupal", "busca.crawler.platforms.drupal", "Drupal's JSON:API (/jsonapi/node/*)"),
    Source("zendesk", "busca.crawler.platforms.zendesk",
           "the Zendesk Help Center API (/api/v2/help_center/LOCALE/articles.json)"),
    Source("mkdocs", "busca.crawler.platforms.mkdocs", "MkDocs' /search/search_index.json"),
    Source("ghost", "busca.crawler.platforms.ghost",
           "Ghost's Content API (/ghost/api/content/posts/, key from the page)"),
    Source("discourse", "busca.crawler.platforms.discourse",
           "Discourse's /latest.json, then /t/ID.json per topic"),
    Source("blogger", "busca.crawler.platforms.blogger",
           "Blogger's paged Atom feed (/feeds/posts/default)"),
    Source("strapi", "busca.crawler.platforms.strapi",
           "a Strapi 4/5 collection (/api/NAME, pagination[page])"),
    Source("contentful", "busca.crawler.platforms.contentful",
           "Contentful's Delivery API entries (skip/limit up to total)"),
    Source("substack", "busca.crawler.platforms.substack",
           "Substack's /api/v1/archive (offset pages), then /api/v1/posts/SLUG"),
    Source("llms", "busca.crawler.platforms.llms",
           "/llms-full.txt (Docusaurus, GitBook, Mintlify)"),
    Source("json", BUILTIN, "a JSON API described by the --json-* options", endpoint_given=True),
    Source("sitemap", BUILTIN, "sitemaps (robots.txt, /wp-sitemap.xml, /sitemap.xml)"),
    Source("feed", BUILTIN, "an RSS or Atom feed, following Atom rel=\"next\" pages"),
    Source("html", BUILTIN, "the site's pages, following same-host links"),
)
NAMES = tuple(s.name for s in SOURCE_TABLE)

# (source, module, detector): the order of --source auto.
STEPS = (
    ("sitemap", BUILTIN, "sitemap_given"),
    ("feed", BUILTIN, "feed_given"),
    *((s.name, s.module, "detect") for s in SOURCE_TABLE if s.module != BUILTIN),
    ("wordpress", BUILTIN, "wordpress_detect"),
    ("sitemap", BUILTIN, "sitemap_detect"),
    ("feed", BUILTIN, "feed_detect"),
    ("html", BUILTIN, "html_detect"),
)
SOURCES = ("auto", *NAMES)
WP_TYPES = ("posts", "pages")  # every site has them; a custom post type goes by its REST name
MAIN_TEXT = ("auto", "busca", "trafilatura")  # who extracts fetched pages' main text
DEFAULT_TYPES = ("posts",)
DEFAULT_WORKERS = 2
DEFAULT_HTML_PAGES = 500  # page budget of the link-following crawl when --max-pages is unset
DEFAULT_RATE = 2.0  # requests per second per host
DEFAULT_TIMEOUT = 20.0  # seconds to connect / between bytes read
DEFAULT_DEADLINE = 60.0  # seconds one attempt at a request may take in all
DEFAULT_RETRIES = 3
DEFAULT_USER_AGENT = f"busca/{__version__} (local search-index crawler; python-requests)"

# WordPress collections under /wp/v2/ that hold no articles (media, people, taxonomies, the
# block editor's parts): never post types, whatever a site adds.
NOT_POST_TYPES = ("media", "users", "comments", "categories", "tags", "taxonomies", "types",
                  "statuses", "settings", "search", "blocks", "block-types", "block-renderer",
                  "block-directory", "block-patterns", "pattern-directory", "templates",
                  "template-parts", "navigation", "menus", "menu-items", "menu-locations",
                  "global-styles", "font-families", "themes", "plugins", "sidebars", "widgets",
                  "widget-types")
_TYPE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def post_type_problem(types: tuple[str, ...]) -> str | None:
    """What makes `types` unusable as WordPress post types (their names under /wp/v2/), or
    None: the CLI and crawl() refuse them with these words."""
    if not types:
        return "no post type given; choose posts, pages or a custom type's REST name"
    for name in types:
        if name in NOT_POST_TYPES:
            return (f'"{name}" is not a post type but another WordPress collection; choose'
                    " posts, pages or a custom type's REST name (/wp-json/wp/v2/types)")
        if not _TYPE_NAME.fullmatch(name):
            return (f'"{name}" is not a post type name: letters, digits, - and _, as under'
                    " /wp-json/wp/v2/ (e.g. --types posts,pages,produto)")
    return None
