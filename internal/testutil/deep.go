package testutil

import (
	"fmt"
	"reflect"
	"strconv"
	"time"
)

var timeType = reflect.TypeFor[time.Time]()

// Fill sets everything reachable from ptr, a pointer, to non-zero
// values: each string, number and time to one of its own, each bool to
// true, each slice to two elements and each map to two entries, each
// filled in turn, and each pointer to a new filled value. Filling the
// same type twice gives deeply equal values. It fails on what it cannot
// fill: an unexported field, an interface, a channel or a function.
func Fill(ptr any) error {
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("testutil.Fill: want a non-nil pointer, not %T", ptr)
	}
	n := 0
	return fill(v.Elem(), v.Elem().Type().String(), &n)
}

func fill(v reflect.Value, path string, n *int) error {
	*n++
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(time.Date(2024, 1, 1, 0, 0, *n, 0, time.UTC)))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + strconv.Itoa(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return fill(v.Elem(), "(*"+path+")", n)
	case reflect.Array:
		for i := range v.Len() {
			if err := fill(v.Index(i), path+"["+strconv.Itoa(i)+"]", n); err != nil {
				return err
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range v.Len() {
			if err := fill(v.Index(i), path+"["+strconv.Itoa(i)+"]", n); err != nil {
				return err
			}
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			e := reflect.New(v.Type().Elem()).Elem()
			if err := fill(k, path+"[key]", n); err != nil {
				return err
			}
			if err := fill(e, path+"["+fmt.Sprint(k)+"]", n); err != nil {
				return err
			}
			v.SetMapIndex(k, e)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				return fmt.Errorf("testutil.Fill: cannot fill the unexported field %s.%s", path, f.Name)
			}
			if err := fill(v.Field(i), path+"."+f.Name, n); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("testutil.Fill: cannot fill %s of kind %s", path, v.Kind())
	}
	return nil
}

// Zeros returns the paths of what is zero among everything reachable
// from v: fields, elements, map entries and pointees holding their zero
// value, and empty slices and maps. Only exported fields are looked at,
// and a time is one value.
func Zeros(v any) []string {
	var out []string
	rv := reflect.ValueOf(v)
	zeros(rv, rv.Type().String(), &out)
	return out
}

func zeros(v reflect.Value, path string, out *[]string) {
	if v.IsZero() {
		*out = append(*out, path)
		return
	}
	if v.Type() == timeType {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		zeros(v.Elem(), "(*"+path+")", out)
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			*out = append(*out, path+" (empty)")
		}
		for i := range v.Len() {
			zeros(v.Index(i), path+"["+strconv.Itoa(i)+"]", out)
		}
	case reflect.Map:
		if v.Len() == 0 {
			*out = append(*out, path+" (empty)")
		}
		for it := v.MapRange(); it.Next(); {
			zeros(it.Value(), path+"["+fmt.Sprint(it.Key())+"]", out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				zeros(v.Field(i), path+"."+f.Name, out)
			}
		}
	}
}

// Mutate changes in place everything reachable from ptr, a pointer: each
// string, number, bool and time, each element of a slice or array, each
// entry of a map (and adds one to each map that has any), each pointee.
// A value that shares memory with *ptr (a shallow copy, say) sees the
// change wherever it does.
func Mutate(ptr any) {
	mutate(reflect.ValueOf(ptr).Elem())
}

func mutate(v reflect.Value) {
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Hour)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "~")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Pointer:
		if !v.IsNil() {
			mutate(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			mutate(v.Index(i))
		}
	case reflect.Map:
		keys := v.MapKeys()
		for _, k := range keys {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			mutate(e)
			v.SetMapIndex(k, e)
		}
		if len(keys) > 0 {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(keys[0])
			mutate(k)
			if !v.MapIndex(k).IsValid() {
				v.SetMapIndex(k, v.MapIndex(keys[0]))
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				mutate(v.Field(i))
			}
		}
	}
}

// Diff returns the paths at which a and b, of one type, differ: the
// deepest values that are not deeply equal (as reflect.DeepEqual sees
// them), or a struct as a whole when every field of it differs.
func Diff(a, b any) []string {
	var out []string
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	diff(va, vb, va.Type().String(), &out)
	return out
}

func diff(a, b reflect.Value, path string, out *[]string) {
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		return
	}
	switch {
	case a.Type() == timeType:
	case a.Kind() == reflect.Pointer && !a.IsNil() && !b.IsNil():
		diff(a.Elem(), b.Elem(), "(*"+path+")", out)
		return
	case (a.Kind() == reflect.Slice || a.Kind() == reflect.Array) && a.Len() == b.Len() && a.Kind() == b.Kind() && (a.Kind() == reflect.Array || a.IsNil() == b.IsNil()):
		for i := range a.Len() {
			diff(a.Index(i), b.Index(i), path+"["+strconv.Itoa(i)+"]", out)
		}
		return
	case a.Kind() == reflect.Struct:
		var in []string
		fields, differ := 0, 0
		for i := range a.NumField() {
			if f := a.Type().Field(i); f.IsExported() {
				fields++
				n := len(in)
				diff(a.Field(i), b.Field(i), path+"."+f.Name, &in)
				if len(in) > n {
					differ++
				}
			}
		}
		switch {
		case differ > 1 && differ == fields:
			*out = append(*out, path+" (every field)")
			return
		case differ > 0:
			*out = append(*out, in...)
			return
		}
	}
	*out = append(*out, fmt.Sprintf("%s: %s, not %s", path, show(a), show(b)))
}

// show prints a value for Diff, telling a nil slice or map from an empty
// one.
func show(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer:
		if v.IsNil() {
			return "nil"
		}
		if v.Kind() != reflect.Pointer && v.Len() == 0 {
			return "empty"
		}
	}
	return fmt.Sprint(v)
}
