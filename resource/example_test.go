package resource_test

import (
	"fmt"

	"senseboard/resource"
)

// A router matches paths case-insensitively, with or without the leading
// slash, and gives the canonical URI with the definition's casing.
func ExampleRouter_Resolve() {
	rt := resource.NewRouter("/net/000123")
	_, err := rt.Handle("/Meas/Acc/{SampleRate}", resource.Subscribe, resource.HandlerFunc(func(*resource.Request) resource.Response {
		return resource.OK(nil)
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := rt.Resolve(resource.Subscribe, "meas/acc/104")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Route.Pattern(), m.Raw(0), m.URI(rt.Prefix(), nil))
	_, err = rt.Resolve(resource.Get, "/Meas/Acc/104")
	fmt.Println(err)
	// Output:
	// /Meas/Acc/{SampleRate} 104 /net/000123/Meas/Acc/104
	// 405 GET is not allowed on /Meas/Acc/{SampleRate}; allowed: SUBSCRIBE
}

// A cache gives the bytes AppendFloat32 gives, faster when values repeat.
func ExampleFloat32Cache() {
	var c resource.Float32Cache
	var b []byte
	for _, v := range []float32{9.80665, -0.0023928226, 9.80665} {
		b = c.Append(b, v)
		b = append(b, ' ')
	}
	fmt.Println(string(b))
	// Output:
	// 9.80665 -0.0023928226 9.80665
}
