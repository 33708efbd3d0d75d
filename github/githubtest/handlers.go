package githubtest

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

func (s *Server) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues", s.serve(listIssues))
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/comments", s.serve(listRepoComments))
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/events", s.serve(listRepoEvents))
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{number}", s.serve(getIssue))
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{number}/comments", s.serve(listIssueComments))
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues/{number}/comments", s.serve(createComment))
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls", s.serve(listPulls))
	mux.HandleFunc("POST /repos/{owner}/{repo}/pulls", s.serve(createPull))
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}", s.serve(getPull))
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}/reviews", s.serve(listReviews))
	mux.HandleFunc("GET /rate_limit", s.serve(rateLimit))
	mux.HandleFunc("GET /user", s.serve(currentUser))
	mux.HandleFunc("/", s.serve(func(*call) (int, any) { return notFound() }))
}

// repo resolves {owner}/{repo}; a repository the caller may not see is "Not Found",
// exactly as for one that does not exist (GitHub does not reveal private repos).
func (c *call) repo() *repo {
	r := c.s.repos[strings.ToLower(c.r.PathValue("owner")+"/"+c.r.PathValue("repo"))]
	if r == nil || (r.visibleTo != nil && !r.visibleTo[c.login]) {
		return nil
	}
	return r
}

func (c *call) number() int {
	n, err := strconv.Atoi(c.r.PathValue("number"))
	if err != nil {
		return 0
	}
	return n
}

func direction(c *call, def string) bool {
	d := c.r.URL.Query().Get("direction")
	if d == "" {
		d = def
	}
	return d == "asc"
}

func badSince() (int, any) {
	return validation("Issue", "since", "invalid", "since must be an ISO 8601 timestamp", docsRoot)
}

// GET /repos/{o}/{r}/issues: state (open), labels (all of them), since (updated at or
// after), creator, sort (created|updated|comments), direction (desc). Pull requests are
// issues here, as on GitHub.
func listIssues(c *call) (int, any) {
	r := c.repo()
	if r == nil {
		return notFound()
	}
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var labels []string
	if l := q.Get("labels"); l != "" {
		for _, x := range strings.Split(l, ",") {
			labels = append(labels, strings.TrimSpace(x))
		}
	}
	sinceT, hasSince, bad := since(c)
	if bad {
		return badSince()
	}
	creator := q.Get("creator")
	var out []*issue
	for _, is := range r.issues {
		if state != "all" && is.state != state {
			continue
		}
		if hasSince && is.updated.Before(sinceT) {
			continue
		}
		if creator != "" && !strings.EqualFold(creator, is.user) {
			continue
		}
		if !hasLabels(is.labels, labels) {
			continue
		}
		out = append(out, is)
	}
	asc := direction(c, "desc")
	key := func(is *issue) int64 {
		switch q.Get("sort") {
		case "updated":
			return is.updated.Unix()
		case "comments":
			return int64(is.comments)
		}
		return is.created.Unix()
	}
	sortByKey(out, asc, key, func(is *issue) int64 { return is.id })
	return pageJSON(c, r, out, (*call).issueJSON)
}

// sortByKey orders a listing by key, ties by id, as GitHub's listings are stable.
func sortByKey[T any](items []T, asc bool, key, id func(T) int64) {
	slices.SortStableFunc(items, func(a, b T) int {
		d := cmp.Compare(key(a), key(b))
		if d == 0 {
			d = cmp.Compare(id(a), id(b))
		}
		if !asc {
			d = -d
		}
		return d
	})
}

// timeKey is the sort key of sort=created|updated.
func timeKey(sortBy string, created, updated time.Time) int64 {
	if sortBy == "updated" {
		return updated.UnixNano()
	}
	return created.UnixNano()
}

// pageJSON answers one page of a listing, each item as its JSON shape.
func pageJSON[T, J any](c *call, r *repo, items []T, toJSON func(*call, *repo, T) J) (int, any) {
	page := paginate(c, items)
	res := make([]J, len(page))
	for i, it := range page {
		res[i] = toJSON(c, r, it)
	}
	return http.StatusOK, res
}

func hasLabels(have, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, w) }) {
			return false
		}
	}
	return true
}

func getIssue(c *call) (int, any) {
	r := c.repo()
	if r == nil {
		return notFound()
	}
	is := r.issue(c.number())
	if is == nil {
		return notFound()
	}
	return http.StatusOK, c.issueJSON(r, is)
}

// GET /repos/{o}/{r}/issues/comments: ascending id by default; sort (created|updated)
// with direction (ignored without sort); since filters on updated_at.
func listRepoComments(c *call) (int, any) {
	r := c.repo()
	if r == nil {
		return notFound()
	}
	return c.comments(r, 0)
}

func listIssueComments(c *call) (int, any) {
	r := c.repo()
	if r == nil || r.issue(c.number()) == nil {
		return notFound()
	}
	return c.comments(r, c.number())
}

func (c *call) comments(r *repo, n int) (int, any) {
	sinceT, hasSince, bad := since(c)
	if bad {
		return badSince()
	}
	var out []*comment
	for _, cm := range r.comments {
		if n != 0 && cm.issue != n {
			continue
		}
		if hasSince && cm.updated.Before(sinceT) {
			continue
		}
		out = append(out, cm)
	}
	if sortBy := c.r.URL.Query().Get("sort"); sortBy != "" && n == 0 {
		asc := direction(c, "desc")
		sortByKey(out, asc, func(cm *comment) int64 { return timeKey(sortBy, cm.created, cm.updated) },
			func(cm *comment) int64 { return cm.id })
	}
	return pageJSON(c, r, out, (*call).commentJSON)
}

func createComment(c *call) (int, any) {
	r := c.repo()
	if r == nil || r.issue(c.number()) == nil {
		return notFound()
	}
	if c.login == "" {
		return fail(http.StatusUnauthorized, "Requires authentication", docsRoot)
	}
	var in struct {
		Body *string `json:"body"`
	}
	if err := decodeBody(c.r, &in); err != nil {
		return fail(http.StatusBadRequest, "Problems parsing JSON", docsRoot)
	}
	if in.Body == nil || *in.Body == "" {
		return validation("IssueComment", "body", "missing_field", "", docsRoot)
	}
	cm := c.s.addCommentLocked(r, c.number(), c.login, *in.Body)
	out := c.commentJSON(r, cm)
	c.header.Set("Location", out.URL)
	return http.StatusCreated, out
}

// GET /repos/{o}/{r}/issues/events: newest first; it has no since parameter, so a
// client pages until it reaches events it has seen.
func listRepoEvents(c *call) (int, any) {
	r := c.repo()
	if r == nil {
		return notFound()
	}
	evs := slices.Clone(r.events)
	slices.Reverse(evs)
	return pageJSON(c, r, evs, (*call).eventJSON)
}

// GET /repos/{o}/{r}/pulls: state (open), head (owner:branch), base, sort
// (created|updated), direction (desc for created, else asc).
func listPulls(c *call) (int, any) {
	r := c.repo()
	if r == nil {
		return notFound()
	}
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	head, base := q.Get("head"), q.Get("base")
	var out []*issue
	for _, is := range r.issues {
		if is.pr == nil || (state != "all" && is.state != state) {
			continue
		}
		if head != "" {
			owner, ref, ok := strings.Cut(head, ":")
			if !ok {
				ref, owner = owner, r.owner
			}
			if !strings.EqualFold(owner, r.owner) || ref != is.pr.head {
				continue
			}
		}
		if base != "" && is.pr.base != base {
			continue
		}
		out = append(out, is)
	}
	sortBy := q.Get("sort")
	def := "asc"
	if sortBy == "" || sortBy == "created" {
		def = "desc"
	}
	asc := direction(c, def)
	sortByKey(out, asc, func(is *issue) int64 { return timeKey(sortBy, is.created, is.updated) },
		func(is *issue) int64 { return is.id })
	return pageJSON(c, r, out, (*call).pullJSON)
}

func getPull(c *call) (int, any) {
	r := c.repo()
	if r == nil {
		return notFound()
	}
	is := r.issue(c.number())
	if is == nil || is.pr == nil {
		return notFound()
	}
	return http.StatusOK, c.pullJSON(r, is)
}

const docsCreatePull = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"

func createPull(c *call) (int, any) {
	r := c.repo()
	if r == nil {
		return notFound()
	}
	if c.login == "" {
		return fail(http.StatusUnauthorized, "Requires authentication", docsRoot)
	}
	var in struct {
		Title string `json:"title"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Body  string `json:"body"`
		Draft bool   `json:"draft"`
	}
	if err := decodeBody(c.r, &in); err != nil {
		return fail(http.StatusBadRequest, "Problems parsing JSON", docsRoot)
	}
	for field, v := range map[string]string{"title": in.Title, "head": in.Head, "base": in.Base} {
		if v == "" {
			return validation("PullRequest", field, "missing_field", "", docsCreatePull)
		}
	}
	head := in.Head
	if _, ref, ok := strings.Cut(head, ":"); ok {
		head = ref
	}
	for _, is := range r.issues {
		if is.pr != nil && is.state == "open" && is.pr.head == head && is.pr.base == in.Base {
			return validation("PullRequest", "", "custom",
				fmt.Sprintf("A pull request already exists for %s:%s.", r.owner, head), docsCreatePull)
		}
	}
	is := c.s.addPRLocked(r, PullRequest{Title: in.Title, Body: in.Body, User: c.login,
		Head: head, Base: in.Base, Draft: in.Draft})
	out := c.pullJSON(r, is)
	c.header.Set("Location", out.URL)
	return http.StatusCreated, out
}

// GET /repos/{o}/{r}/pulls/{n}/reviews: chronological.
func listReviews(c *call) (int, any) {
	r := c.repo()
	if r == nil {
		return notFound()
	}
	is := r.issue(c.number())
	if is == nil || is.pr == nil {
		return notFound()
	}
	return pageJSON(c, r, r.reviews[is.number], (*call).reviewJSON)
}

// GET /rate_limit costs nothing, as on GitHub.
func rateLimit(c *call) (int, any) {
	b := c.s.budgetLocked(c.login)
	core := rateJSON{Limit: c.s.limitFor(c.login), Remaining: b.remaining, Reset: b.reset.Unix(), Used: b.used, Resource: "core"}
	return http.StatusOK, map[string]any{"resources": map[string]rateJSON{"core": core}, "rate": core}
}

func currentUser(c *call) (int, any) {
	if c.login == "" {
		return fail(http.StatusUnauthorized, "Requires authentication", docsRoot)
	}
	return http.StatusOK, c.user(c.login)
}
