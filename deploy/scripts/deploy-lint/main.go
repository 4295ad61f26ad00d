// deploy-lint parses deploy/ files the way their real consumers do, without a Docker engine or a
// cluster: compose files through compose-go (the loader behind `docker compose config`),
// Prometheus rule files through Prometheus's own rulefmt and PromQL parser (what
// `promtool check rules` runs), and YAML streams into JSON for the checks written in TypeScript.
//
//	deploy-lint compose FILE...   validate, interpolate and normalize; print the model as JSON
//	deploy-lint rules FILE...     parse every rule group and expression; print {"rules": N}
//	deploy-lint yaml FILE         print the file's YAML documents as a JSON array
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: deploy-lint compose FILE... | rules FILE... | yaml FILE")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 3 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "compose":
		err = checkCompose(os.Args[2:])
	case "rules":
		err = checkRules(os.Args[2:])
	case "yaml":
		err = yamlToJSON(os.Args[2])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// checkCompose loads the project (schema validation, interpolation, normalization) and prints the
// resolved model (as JSON), like `docker compose config --format json`.
func checkCompose(files []string) error {
	options, err := cli.NewProjectOptions(files, cli.WithOsEnv, cli.WithDotEnv, cli.WithWorkingDirectory(filepath.Dir(files[0])))
	if err != nil {
		return err
	}
	project, err := options.LoadProject(context.Background())
	if err != nil {
		return fmt.Errorf("%s: %w", files[0], err)
	}
	out, err := project.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}

func checkRules(files []string) error {
	total := 0
	for _, file := range files {
		groups, errs := rulefmt.ParseFile(file, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			return fmt.Errorf("%s: %v", file, errs)
		}
		for _, g := range groups.Groups {
			total += len(g.Rules)
		}
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]int{"rules": total})
}

func yamlToJSON(file string) error {
	in, err := os.Open(file)
	if err != nil {
		return err
	}
	defer in.Close()
	decoder := yaml.NewDecoder(in)
	docs := []any{}
	for {
		var doc any
		err := decoder.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
	return json.NewEncoder(os.Stdout).Encode(docs)
}
