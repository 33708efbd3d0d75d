package githubtest

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The in-memory world. Numbers are shared by issues and pull requests as on GitHub (a
// pull request is an issue with a pull_request key); ids come from one server-wide
// sequence, so they increase in creation order like GitHub's.

type repo struct {
	owner, name string
	id          int64
	visibleTo   map[string]bool // logins that may see it; nil: everyone
	issues      []*issue        // issues[n-1] is number n
	comments    []*comment
	events      []*event
	reviews     map[int][]*review
}

type issue struct {
	id       int64
	number   int
	title    string
	body     string
	user     string
	state    string // open | closed
	labels   []string
	created  time.Time
	updated  time.Time
	closed   time.Time
	comments int
	pr       *pull
}

type pull struct {
	head, base string
	draft      bool
	sha        string
}

type comment struct {
	id      int64
	issue   int
	user    string
	body    string
	created time.Time
	updated time.Time
}

type event struct {
	id      int64
	issue   int
	actor   string
	event   string // labeled, unlabeled, closed, reopened
	label   string
	created time.Time
}

type review struct {
	id        int64
	pr        int
	user      string
	state     string // APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED
	body      string
	submitted time.Time
	commit    string
}

// Issue is what a test gives AddIssue. A zero CreatedAt is the server's now.
type Issue struct {
	Title     string
	Body      string
	User      string
	Labels    []string
	CreatedAt time.Time
}

// PullRequest is what a test gives AddPR. Head and Base are branch names.
type PullRequest struct {
	Title     string
	Body      string
	User      string
	Head      string
	Base      string
	Draft     bool
	CreatedAt time.Time
}

// AddRepo creates owner/name. With logins given, only those users can see it; everyone
// else gets 404, as GitHub answers for a private repository a token cannot read.
func (s *Server) AddRepo(full string, visibleTo ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	owner, name, ok := strings.Cut(full, "/")
	if !ok {
		panic("githubtest: repo must be owner/name: " + full)
	}
	r := &repo{owner: owner, name: name, id: s.id(), reviews: map[int][]*review{}}
	if len(visibleTo) > 0 {
		r.visibleTo = map[string]bool{}
		for _, l := range visibleTo {
			r.visibleTo[l] = true
		}
	}
	s.repos[strings.ToLower(full)] = r
}

func (s *Server) repoLocked(full string) *repo {
	r := s.repos[strings.ToLower(full)]
	if r == nil {
		panic("githubtest: no repo " + full)
	}
	return r
}

func (r *repo) issue(n int) *issue {
	if n < 1 || n > len(r.issues) {
		return nil
	}
	return r.issues[n-1]
}

func (s *Server) at(t time.Time) time.Time {
	if t.IsZero() {
		return s.stamp()
	}
	return t.UTC().Truncate(time.Second)
}

// MaxBody is GitHub's bound on an issue, pull request or comment body: 65,536
// characters (not bytes: a body of two-byte characters is 128 KiB). A page of 100 such
// issues is over 10 MiB, which is how big a real page gets.
const MaxBody = 65536

// checkBody refuses what GitHub would refuse ("body is too long (maximum is 65536
// characters)"), so a test cannot build a page larger than GitHub serves.
func checkBody(body string) {
	if n := utf8.RuneCountInString(body); n > MaxBody {
		panic(fmt.Sprintf("githubtest: a body of %d characters; GitHub allows %d", n, MaxBody))
	}
}

// AddIssue opens an issue and returns its number.
func (s *Server) AddIssue(full string, in Issue) int {
	checkBody(in.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(full)
	at := s.at(in.CreatedAt)
	is := &issue{id: s.id(), number: len(r.issues) + 1, title: in.Title, body: in.Body,
		user: orDefault(in.User, "octocat"), state: "open", labels: slices.Clone(in.Labels),
		created: at, updated: at}
	r.issues = append(r.issues, is)
	return is.number
}

// AddPR opens a pull request and returns its number.
func (s *Server) AddPR(full string, in PullRequest) int {
	checkBody(in.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addPRLocked(s.repoLocked(full), in).number
}

func (s *Server) addPRLocked(r *repo, in PullRequest) *issue {
	at := s.at(in.CreatedAt)
	is := &issue{id: s.id(), number: len(r.issues) + 1, title: in.Title, body: in.Body,
		user: orDefault(in.User, "octocat"), state: "open", created: at, updated: at,
		pr: &pull{head: in.Head, base: orDefault(in.Base, "main"), draft: in.Draft,
			sha: fmt.Sprintf("%040x", s.nextID)}}
	r.issues = append(r.issues, is)
	return is
}

// AddComment comments on issue (or pull request) n and returns the comment's id.
func (s *Server) AddComment(full string, n int, user, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addCommentLocked(s.repoLocked(full), n, user, body).id
}

func (s *Server) addCommentLocked(r *repo, n int, user, body string) *comment {
	checkBody(body)
	is := r.issue(n)
	if is == nil {
		panic(fmt.Sprintf("githubtest: no issue #%d", n))
	}
	at := s.stamp()
	c := &comment{id: s.id(), issue: n, user: user, body: body, created: at, updated: at}
	r.comments = append(r.comments, c)
	is.comments++
	is.updated = at
	return c
}

// EditComment changes a comment's body, moving its updated_at.
func (s *Server) EditComment(full string, id int64, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.repoLocked(full).comments {
		if c.id == id {
			c.body, c.updated = body, s.stamp()
			return
		}
	}
	panic(fmt.Sprintf("githubtest: no comment %d", id))
}

// AddLabel labels issue n as actor did, recording a "labeled" event; it returns the
// event's id. Labelling a label already there records nothing, as on GitHub.
func (s *Server) AddLabel(full string, n int, label, actor string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(full)
	is := r.issue(n)
	if is == nil {
		panic(fmt.Sprintf("githubtest: no issue #%d", n))
	}
	if slices.Contains(is.labels, label) {
		return 0
	}
	at := s.stamp()
	is.labels = append(is.labels, label)
	is.updated = at
	e := &event{id: s.id(), issue: n, actor: actor, event: "labeled", label: label, created: at}
	r.events = append(r.events, e)
	return e.id
}

// CloseIssue closes issue n, recording a "closed" event.
func (s *Server) CloseIssue(full string, n int, actor string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(full)
	is := r.issue(n)
	at := s.stamp()
	is.state, is.closed, is.updated = "closed", at, at
	r.events = append(r.events, &event{id: s.id(), issue: n, actor: actor, event: "closed", created: at})
}

// AddReview submits a review on pull request n (state APPROVED, CHANGES_REQUESTED or
// COMMENTED) and returns its id. Like GitHub it moves the pull request's updated_at.
func (s *Server) AddReview(full string, n int, user, state, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(full)
	is := r.issue(n)
	if is == nil || is.pr == nil {
		panic(fmt.Sprintf("githubtest: no pull request #%d", n))
	}
	at := s.stamp()
	rv := &review{id: s.id(), pr: n, user: user, state: state, body: body, submitted: at, commit: is.pr.sha}
	r.reviews[n] = append(r.reviews[n], rv)
	is.updated = at
	return rv.id
}

// Comments returns the bodies of issue n's comments, oldest first (to check what a
// client posted).
func (s *Server) Comments(full string, n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.repoLocked(full).comments {
		if c.issue == n {
			out = append(out, c.body)
		}
	}
	return out
}

// PullRequests returns the numbers of the repository's pull requests.
func (s *Server) PullRequests(full string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, is := range s.repoLocked(full).issues {
		if is.pr != nil {
			out = append(out, is.number)
		}
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
