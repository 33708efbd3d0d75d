package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Kinds of failure a caller tells apart with errors.Is; errors.As to *Error gives the
// status, GitHub's message and, for rate limits, when to try again.
var (
	ErrUnauthorized = errors.New("unauthorized")       // 401: no or a bad token
	ErrForbidden    = errors.New("forbidden")          // 403 not about rate: the token lacks a permission
	ErrRateLimited  = errors.New("rate limited")       // 403/429 with a reset or retry-after
	ErrNotFound     = errors.New("not found")          // 404: the repo (or issue) is not visible to this token
	ErrInvalid      = errors.New("request refused")    // 422 and other 4xx: GitHub refused what was asked
	ErrServer       = errors.New("server error")       // 5xx
	ErrUnreachable  = errors.New("unreachable")        // network error or timeout
	ErrMalformed    = errors.New("malformed response") // a body that does not decode
)

// Error is one failed GitHub call.
type Error struct {
	Kind    error     // one of the Err* values
	Op      string    // what was attempted: "list issues"
	Repo    string    // owner/name, when the call was about one
	Item    string    // what in the repo, when the call was about one thing: "issue #5"
	Status  int       // HTTP status (0 when none came back)
	Message string    // GitHub's message, or the transport's
	RetryAt time.Time // rate limits: the earliest time a retry can succeed
	Err     error     // the underlying error, if any
}

func (e *Error) Error() string {
	what := e.Op
	if e.Repo != "" {
		what += " " + e.Repo
	}
	var detail string
	switch {
	case errors.Is(e.Kind, ErrNotFound) && e.Item != "":
		detail = e.Item + " not found, or repo " + e.Repo + " not visible to this token (404)"
	case errors.Is(e.Kind, ErrNotFound) && e.Repo != "":
		detail = "repo " + e.Repo + " not visible to this token (404): check the name and the token's access"
	case errors.Is(e.Kind, ErrUnauthorized):
		detail = "unauthorized (401): set github.token, GH_TOKEN or GITHUB_TOKEN, or run gh auth login"
	case errors.Is(e.Kind, ErrRateLimited):
		detail = "rate limited until " + e.RetryAt.Local().Format("15:04:05")
	default:
		detail = e.Kind.Error()
		if e.Status != 0 {
			detail += " (" + strconv.Itoa(e.Status) + ")"
		}
	}
	if e.Message != "" {
		detail += ": " + e.Message
	}
	return "github: " + what + ": " + detail
}

func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// RetryAt is when a rate-limited call may be tried again.
func RetryAt(err error) (time.Time, bool) {
	var e *Error
	if errors.As(err, &e) && errors.Is(e.Kind, ErrRateLimited) {
		return e.RetryAt, true
	}
	return time.Time{}, false
}

// classify turns what a request returned into an *Error (or passes a cancelled
// context through untouched, so callers see their own cancellation).
func classify(ctx context.Context, op, repo string, now time.Time, resp *response, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("github: %s %s: %w", op, repo, ctx.Err())
	}
	e := &Error{Op: op, Repo: repo, Err: err}
	if resp != nil {
		e.Status = resp.Status
	}
	var limit *limitError
	var ae *apiError
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var uerr *url.Error
	switch {
	case errors.As(err, &limit):
		// Not sent: GitHub's last answers said it would be refused until then.
		e.Kind, e.Message, e.RetryAt = ErrRateLimited, limit.Message, limit.Reset
	case errors.As(err, &ae):
		e.Message, e.Status = ae.Message, ae.Status
		switch {
		case e.Status == http.StatusUnauthorized:
			e.Kind = ErrUnauthorized
		case e.Status == http.StatusForbidden || e.Status == http.StatusTooManyRequests:
			if at, ok := retryAfter(ae.Status, ae.Header, now); ok {
				e.Kind, e.RetryAt = ErrRateLimited, at
			} else if e.Status == http.StatusTooManyRequests || isSecondary(ae) {
				e.Kind, e.RetryAt = ErrRateLimited, now.Add(time.Minute) // GitHub's advice when it names no time
			} else {
				e.Kind = ErrForbidden
			}
		case e.Status == http.StatusNotFound:
			e.Kind = ErrNotFound
		case e.Status >= 500:
			e.Kind = ErrServer
		default:
			e.Kind = ErrInvalid
			for _, d := range ae.Errors {
				if d.Message != "" {
					e.Message += " (" + d.Message + ")"
				}
			}
		}
	case errors.As(err, &syn), errors.As(err, &typ), errors.Is(err, io.ErrUnexpectedEOF):
		e.Kind, e.Message = ErrMalformed, err.Error()
	case errors.As(err, &uerr):
		e.Kind, e.Message = ErrUnreachable, uerr.Err.Error()
		if uerr.Timeout() {
			e.Message = "timed out"
		}
	default:
		e.Kind, e.Message = ErrUnreachable, err.Error()
	}
	return e
}

// retryAfter reads Retry-After (seconds) or, with the budget spent, x-ratelimit-reset,
// from a 403 or 429 answer.
func retryAfter(status int, h http.Header, now time.Time) (time.Time, bool) {
	if status != http.StatusForbidden && status != http.StatusTooManyRequests {
		return time.Time{}, false
	}
	if v := h.Get("Retry-After"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return now.Add(time.Duration(n) * time.Second), true
		}
	}
	if h.Get("X-RateLimit-Remaining") == "0" {
		if n, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return time.Unix(n, 0), true
		}
	}
	return time.Time{}, false
}

func errorf(kind error, op, repo, format string, a ...any) error {
	return &Error{Kind: kind, Op: op, Repo: repo, Message: fmt.Sprintf(format, a...)}
}
