package cli

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v3"
)

// positiveDuration is a duration flag that must not be negative: `agent wait --timeout
// -5s` was taken as "no timeout" and waited forever. Zero (or unset) is the flag's
// default; a value under a second counts as one second, since the wire carries whole
// seconds and 0 there means "no bound".
func positiveDuration(c *cli.Command, name string) (time.Duration, error) {
	d := c.Duration(name)
	if d < 0 {
		return 0, fmt.Errorf("--%s %s: give a positive duration such as 30s or 10m", name, d)
	}
	return d, nil
}

// seconds rounds a positive duration up to whole seconds, as the wire carries them.
func seconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}
