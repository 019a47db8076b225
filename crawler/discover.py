"""Find how to read a site: the registry's detectors in order (registry.py), then HTML links.

From the URL a user types (home page or any page): a platform named by the page itself
(crawler/platforms/), then
1. WordPress: the `Link: <…/wp-json/>; rel="https://api.w.org/"` header or the same
   `<link>` in the HTML, else `/wp-json/`, else `/?rest_route=/` (plain permalinks), in
   the URL's first folder first (a WordPress installed in /blog/);
   a probe of `/wp/v2/posts` tells whether the API answers anonymous clients.
2. Sitemaps named in robots.txt, else `/wp-sitemap.xml`, `/sitemap.xml`, `/sitemap_index.xml`.
3. An RSS/Atom feed linked from the page.
4. Otherwise the pages themselves, following same-host links.
"""

from __future__ import annotations

import ipaddress
import re
import zlib
from dataclasses import replace
from urllib.parse import urljoin, urlsplit

from . import registry
from .defaults import WP_TYPES, post_type_problem
from .errors import CrawlError, Disallowed, FetchError, OffSite, TooSlow
from .found import Discovery, Start
from .html import HtmlPage, decode_html, extract_page
from .http import Fetcher, Response
from .sitemap import looks_like_sitemap
from .wordpress import api_url

SITEMAP_PROBES = ("/wp-sitemap.xml", "/sitemap.xml", "/sitemap_index.xml")
_API_REL = re.compile(r'<([^<>]+)>\s*;[^,<]*rel="?https://api\.w\.org/"?', re.I)  # to the next <


def discover(url: str, fetcher: Fetcher, *, source: str = "auto",
             types: tuple[str, ...] = ("posts",), skip: tuple[str, ...] = ()) -> Discovery:
    """Decide the source for `url`; CrawlError when there is nothing usable. `skip`: sources
    not to try (auto mode after a site's API proved unusable). The detectors and their
    order are the registry's."""
    response = start_page(url, fetcher)
    page = _parse(response)
    html = decode_html(response.body, response.headers.get("Content-Type")) if page else ""
    start = Start(response, page, html, fetcher, types, strict=source != "auto")
    for _name, detect in registry.detectors(source, skip=skip):
        found = detect(start)
        if found is not None:
            return replace(found, notes=tuple(dict.fromkeys((*start.notes, *found.notes))))
    raise CrawlError(f"no {source} source found at {response.url}; try --source auto")


def find_wordpress(start: Start) -> Discovery | None:
    """The WordPress REST API the start page advertises or answers at, if anonymous clients
    may list posts."""
    return _wordpress(start.response, start.page, start.fetcher, start.types, start.notes,
                      strict=start.strict)


def find_sitemaps(url: str, fetcher: Fetcher, notes: list[str]) -> Discovery | None:
    """Sitemaps named by robots.txt, else found at the usual paths."""
    return _sitemaps(url, fetcher, notes)


def xml_kind(response: Response) -> str | None:
    """"sitemap" or "feed" when the answer is one, else None."""
    return _xml_kind(response)


def start_page(url: str, fetcher: Fetcher) -> Response:
    """GET the start URL; CrawlError with the fix when it cannot be fetched."""
    xml = re.search(r"\.xml(\.gz)?$", urlsplit(url).path, re.I)  # a sitemap given: its cap
    try:
        return fetcher.get(url, max_bytes=fetcher.sitemap_cap if xml else None)
    except Disallowed:
        raise CrawlError(f"robots.txt of {urlsplit(url).netloc} does not allow"
                         f" {fetcher.polite.user_agent.split('/')[0]} to fetch {url};"
                         " nothing was crawled") from None
    except OffSite as e:
        host = urlsplit(e.url).hostname
        raise CrawlError(f"{url} redirects to {e.url}, another host; crawl that URL"
                         f" instead or add --allow-host {host}") from None
    except FetchError as e:
        raise CrawlError(f"cannot fetch {url}: {_why(url, e)}") from None


def _why(url: str, error: FetchError) -> str:
    """The reason, naming the URL that was too slow when it is not the start URL."""
    if isinstance(error, TooSlow) and error.url != url:
        return f"{error.url}: {error.reason}"
    return error.reason


def _parse(response: Response) -> HtmlPage | None:
    ctype = response.headers.get("Content-Type", "")
    if response.status >= 400 or ("html" not in ctype and ctype):
        return None
    return extract_page(decode_html(response.body, ctype), response.url)


def _xml_kind(response: Response) -> str | None:
    if response.status != 200:
        return None
    head = response.body[:2048]
    if head[:2] == b"\x1f\x8b":  # a gzip sitemap given (sitemap.xml.gz): its first bytes
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(response.body, 2048)
        except zlib.error:
            return None
    head = head.lstrip()
    if looks_like_sitemap(head):
        return "sitemap"
    if re.search(rb"<(rss|feed)[\s>]", head) and b"<html" not in head.lower():
        return "feed"
    return None


def _wordpress(response, page, fetcher, types, notes, *, strict: bool) -> Discovery | None:
    root, how = _advertised(response, page)
    if root is not None and not fetcher.on_site(root) and _inward(root) \
            and not _inward(response.url):
        host = urlsplit(root).hostname
        notes.append(f"the site names its API at {root[:100]}, on this machine or a private"
                     " network, not the site's: not followed (add --allow-host"
                     f" {host} if it is right); asking the site itself")
        root = None
    if root is None:
        root, how = _probe_api(response.url, fetcher)
    if root is None:
        if strict:
            raise CrawlError(f"no WordPress REST API at {response.url}: no api.w.org link, and"
                             " /wp-json/ and /?rest_route=/ do not answer; try --source sitemap")
        return None
    if not fetcher.on_site(root):  # a headless site: the site itself names its API host
        fetcher.hosts.add(urlsplit(root).hostname)
        notes.append(f"the site's API lives on another host, {urlsplit(root).hostname}")
    probe = _api_probe(root, types[0], fetcher)
    if probe in (None, "HTTP 404"):  # the API answers: every custom type asked has a route
        _check_custom_types(root, types, probe, fetcher)
    if probe is None:
        return Discovery("wordpress", response.url, how, api_root=root, notes=tuple(notes))
    if probe in ("HTTP 401", "HTTP 403"):
        message = (f"the site refuses its API to anonymous clients ({probe} from {root});"
                   " busca does not try again")
    elif probe == "robots.txt disallows it":
        message = f"robots.txt disallows the WordPress API at {root}"
    else:
        message = f"the WordPress API at {root} does not list {types[0]} ({probe})"
    if strict:
        raise CrawlError(message + "; try --source sitemap or --source html")
    notes.append(message + "; looking for a sitemap instead")
    return None


def _inward(url: str) -> bool:
    """Whether the URL's host is this machine or a private network: `localhost` or an
    address that is not global (loopback, private, link-local such as 169.254.169.254). A
    site may name its API on another host (a headless WordPress), but not there: the crawl
    would fetch the user's own services for the site."""
    try:
        host = (urlsplit(url).hostname or "").rstrip(".")
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return not ipaddress.ip_address(host).is_global
    except ValueError:  # a name
        return False


def _advertised(response: Response, page: HtmlPage | None) -> tuple[str | None, str]:
    match = _API_REL.search(response.headers.get("Link", ""))
    if match:
        return urljoin(response.url, match.group(1)), "Link header rel=\"https://api.w.org/\""
    if page is not None and page.api_root:
        return page.api_root, '<link rel="https://api.w.org/"> in the page'
    return None, ""


def _probe_api(url: str, fetcher: Fetcher) -> tuple[str | None, str]:
    origin = "{0.scheme}://{0.netloc}/".format(urlsplit(url))
    folder = urlsplit(url).path.lstrip("/").split("/")[0]  # WordPress installed in /blog/
    folder = origin + folder + "/" if folder and "." not in folder else None  # (not a file)
    roots = (folder + "wp-json/" if folder else None, origin + "wp-json/",
             origin + "?rest_route=/", folder + "?rest_route=/" if folder else None)
    for root in filter(None, roots):  # the folder's ?rest_route= last: any path takes it
        try:
            response = fetcher.get(root)
        except FetchError:
            continue
        if response.status == 200 and b'"namespaces"' in response.body[:65536]:
            try:
                if "wp/v2" in response.json().get("namespaces", []):
                    return root, f"{root} answers"
            except (FetchError, AttributeError):
                continue
    return None, ""


def _api_probe(root: str, kind: str, fetcher: Fetcher) -> str | None:
    """None if the collection answers anonymous clients, else the refusal ("HTTP 401")."""
    try:
        response = fetcher.get(api_url(root, f"wp/v2/{kind}", {"per_page": 1, "_fields": "id"}))
    except FetchError as e:
        return e.reason
    if response.status >= 400:
        return f"HTTP {response.status}"
    return None


def _check_custom_types(root: str, types: tuple[str, ...], first: str | None,
                        fetcher: Fetcher) -> None:
    """CrawlError when --types names a custom post type that the API has no route for
    (`first`: the probe of types[0], already made)."""
    for kind in types:
        if kind in WP_TYPES:
            continue
        answer = first if kind == types[0] else _api_probe(root, kind, fetcher)
        if answer == "HTTP 404":
            raise CrawlError(_no_such_type(root, kind, fetcher))


def _no_such_type(root: str, kind: str, fetcher: Fetcher) -> str:
    """The error for a post type the API has no route for, naming the ones it has (the REST
    names `/wp/v2/types` gives, collections that hold no articles left out)."""
    message, listed = f'the WordPress API at {root} has no post type "{kind}"', \
        api_url(root, "wp/v2/types", {})
    try:
        types = fetcher.get(listed).json()
    except FetchError:
        types = None
    names = [t.get("rest_base") for t in types.values() if isinstance(t, dict)] \
        if isinstance(types, dict) else []
    names = [n for n in names if isinstance(n, str) and post_type_problem((n,)) is None]
    if not names:
        return message + f"; {listed} lists the ones it has (--types takes their rest_base)"
    return message + f"; its post types are {', '.join(names)} (--types takes these names)"


def _sitemaps(url: str, fetcher: Fetcher, notes: list[str]) -> Discovery | None:
    try:
        listed = fetcher.robots(url).sitemaps()
    except FetchError:
        listed = []
    listed = [s for s in listed if fetcher.on_site(s)]
    if listed:
        return Discovery("sitemap", url, "sitemap named in robots.txt", sitemaps=tuple(listed),
                         notes=tuple(notes))
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
    for path in SITEMAP_PROBES:
        try:
            response = fetcher.get(origin + path, max_bytes=fetcher.sitemap_cap)
        except FetchError:
            continue
        if response.status == 200 and looks_like_sitemap(response.body[:2048].lstrip()):
            return Discovery("sitemap", url, f"{path} found", sitemaps=(response.url,),
                             notes=tuple(notes))
    return None
