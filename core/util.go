package core

import (
	"encoding/json"
	"strconv"
)

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }
