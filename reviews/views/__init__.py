"""The console's views, one module per page.

Function views returning TemplateResponse. One view serves the full page and
its `{% partialdef %}` fragments: an htmx request names the element it
targets and `reviews.http.page_or_fragment()` renders the partial of that
name. A plain POST redirects with a message; an htmx POST re-renders one
fragment in place. Objects come through the scoped lookups in
memoryhub.services, so another workspace's object is a 404; the services
decide who may do what (a wrong role is a 403), and any other refusal is
shown next to the form it came from. Each POST reads its request through a
Form in reviews.forms; read queries live in memoryhub.selectors. Messages
are plain text or format_html over constants and ids: never markup built
from what an agent or user typed.

    queue.py          /  (the queue, bulk decisions, badge) and /home/
    proposal.py       proposals/<pk>/
    sessions.py       sessions/<pk>/
    history.py        agents/<slug>/files/<file>/history/ and …/blame/
    changes.py        changes/
    direct_writes.py  direct-writes/
    agents.py         agents/, agents/<slug>/ and one URL per action on it
    preview.py        agents/<slug>/preview/
    workspaces.py     workspaces/<slug>/settings/
    audit.py          audit/
    dashboard.py      dashboard/
    compliance.py     compliance/ (exports, erasures, retention)
    common.py         what they share (scoped 404s, file URLs, query strings)
"""
