"""The links and images of a site page (href and src), for the site's tests (publish_test, browser_test)."""

import html.parser


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.targets = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.targets.append(value)


def links_of(path):
    parser = Links()
    with open(path) as f:
        parser.feed(f.read())
    return parser.targets
