package herdrtest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	uv "github.com/charmbracelet/ultraviolet"
)

// namedKeys is herdr's key-name grammar (reference §2.6), case-insensitive.
var namedKeys = map[string]rune{
	"enter": uv.KeyEnter, "return": uv.KeyEnter,
	"esc": uv.KeyEscape, "escape": uv.KeyEscape,
	"tab":       uv.KeyTab,
	"backspace": uv.KeyBackspace, "bs": uv.KeyBackspace,
	"space": uv.KeySpace,
	"left":  uv.KeyLeft, "right": uv.KeyRight, "up": uv.KeyUp, "down": uv.KeyDown,
	"minus": '-', "plus": '+', "comma": ',', "period": '.', "slash": '/',
	"backslash": '\\', "quote": '\'', "double_quote": '"', "semicolon": ';',
	"colon": ':', "percent": '%', "ampersand": '&', "backtick": '`',
}

// parseKey turns one herdr key name into a key press; every key of a request is
// parsed before any byte is written, so one bad name sends nothing (invalid_key).
func parseKey(name string) (uv.KeyPressEvent, error) {
	orig := name
	// C-c is an alias of ctrl+c.
	if len(name) == 3 && (name[0] == 'C' || name[0] == 'c') && name[1] == '-' {
		name = "ctrl+" + name[2:]
	}
	parts := strings.Split(name, "+")
	// A literal "+" key arrives as an empty last part ("ctrl++"); herdr spells it "plus".
	var mod uv.KeyMod
	for _, m := range parts[:len(parts)-1] {
		switch strings.ToLower(m) {
		case "ctrl", "control":
			mod |= uv.ModCtrl
		case "alt", "option", "meta":
			mod |= uv.ModAlt
		case "shift":
			mod |= uv.ModShift
		case "cmd", "super":
			mod |= uv.ModSuper
		case "hyper":
			mod |= uv.ModHyper
		default:
			return uv.KeyPressEvent{}, fmt.Errorf("invalid key %q: unknown modifier %q", orig, m)
		}
	}
	base := parts[len(parts)-1]
	if base == "" {
		return uv.KeyPressEvent{}, fmt.Errorf("invalid key %q", orig)
	}
	var k uv.KeyPressEvent
	if code, ok := namedKeys[strings.ToLower(base)]; ok {
		k.Code = code
		if code < uv.KeyExtended && code != uv.KeyEnter && code != uv.KeyTab &&
			code != uv.KeyBackspace && code != uv.KeyEscape {
			k.Text = string(code)
		}
	} else if f, ok := functionKey(base); ok {
		k.Code = f
	} else if utf8.RuneCountInString(base) == 1 {
		r, _ := utf8.DecodeRuneInString(base)
		k.Code = r
		k.Text = base
	} else {
		return uv.KeyPressEvent{}, fmt.Errorf("invalid key %q", orig)
	}
	k.Mod = mod
	if mod&uv.ModShift != 0 && k.Text != "" {
		k.Text = strings.ToUpper(k.Text)
		k.Mod &^= uv.ModShift
	}
	if mod&uv.ModCtrl != 0 {
		k.Code = []rune(strings.ToLower(string(k.Code)))[0]
		k.Text = ""
	}
	if k.Mod&(uv.ModSuper|uv.ModHyper) != 0 {
		// Legacy encoding has no super/hyper; herdr drops them for such terminals.
		k.Mod &^= uv.ModSuper | uv.ModHyper
	}
	if k.Mod&uv.ModAlt != 0 && k.Text != "" {
		k.Text = "\x1b" + k.Text
		k.Mod &^= uv.ModAlt
	}
	return k, nil
}

func functionKey(s string) (rune, bool) {
	if len(s) < 2 || (s[0] != 'f' && s[0] != 'F') {
		return 0, false
	}
	n, err := strconv.Atoi(s[1:])
	if err != nil || n < 1 || n > 12 {
		return 0, false
	}
	return uv.KeyF1 + rune(n-1), true
}

// parseKeys reads a request's key names; a name herdr does not know is invalid_key.
func parseKeys(names []string) ([]uv.KeyPressEvent, *apiError) {
	out := make([]uv.KeyPressEvent, 0, len(names))
	for _, n := range names {
		k, err := parseKey(n)
		if err != nil {
			return nil, errf("invalid_key", "%v", err)
		}
		out = append(out, k)
	}
	return out, nil
}
