package e2e

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// strictDecode decodes raw into a fresh value of like's type, refusing unknown fields.
func strictDecode(raw []byte, like any) error {
	v := reflect.New(reflect.TypeOf(like)).Interface()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
