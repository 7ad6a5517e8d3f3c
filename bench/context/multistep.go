package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/codemode"
)

// The multi-step tasks of issue 35: each a chain of 2–5 calls of the
// catalogue's tools whose intermediate outputs are as large as the real
// servers' (shapes after their APIs: GitHub's issues and pulls, Slack's
// history, the filesystem's files, Maps' places, search engines'
// results, Notion's pages, firecrawl's markdown), played with scripted
// model turns in each discovery mode.

// step is one call of a task: the tool, what a model would search for
// to find it, its arguments and its output.
type step struct {
	Tool  string
	Query string
	Args  map[string]any
	Out   func(r *rand.Rand) any
}

type mtask struct {
	Name    string
	Steps   []step
	Program string // what the model writes in code mode
}

var words = strings.Fields(`the a to of and in for is on that with as it by this be are from at or an was
build fix update error request response user server client config test release deploy service cache
timeout token session migrate store index query route handler worker queue retry backoff limit budget
memory latency metric trace span log alert page issue commit branch merge review comment label owner
customer invoice payment order account ticket support region city street coffee museum park station`)

func text(r *rand.Rand, n int) string {
	b := make([]string, n)
	for i := range b {
		b[i] = words[r.IntN(len(words))]
	}
	return strings.Join(b, " ")
}

func ts(r *rand.Rand) string {
	return fmt.Sprintf("2026-%02d-%02dT%02d:%02d:%02dZ", 1+r.IntN(11), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))
}

func ghUser(r *rand.Rand) map[string]any {
	login := fmt.Sprintf("dev%d", r.IntN(500))
	return map[string]any{"login": login, "id": 1000 + r.IntN(90000), "node_id": fmt.Sprintf("MDQ6VXNlcj%d", r.IntN(1e6)),
		"avatar_url": "https://avatars.githubusercontent.com/u/" + login, "html_url": "https://github.com/" + login, "type": "User", "site_admin": false}
}

func ghIssue(r *rand.Rand, n int) map[string]any {
	labels := []any{}
	for range r.IntN(3) {
		l := words[r.IntN(len(words))]
		labels = append(labels, map[string]any{"id": r.IntN(1e6), "name": l, "color": "d73a4a", "default": false, "description": text(r, 6)})
	}
	state := "open"
	if r.IntN(3) == 0 {
		state = "closed"
	}
	return map[string]any{"url": fmt.Sprintf("https://api.github.com/repos/acme/app/issues/%d", n), "html_url": fmt.Sprintf("https://github.com/acme/app/issues/%d", n),
		"id": 2000000 + n, "number": n, "title": text(r, 8), "user": ghUser(r), "labels": labels, "state": state, "locked": false,
		"assignee": nil, "comments": r.IntN(12), "created_at": ts(r), "updated_at": ts(r), "closed_at": nil, "author_association": "MEMBER",
		"body": text(r, 60+r.IntN(120)), "reactions": map[string]any{"total_count": r.IntN(5), "+1": r.IntN(3), "-1": 0}}
}

func list(n int, f func(i int) any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func ghIssues(n int) func(r *rand.Rand) any {
	return func(r *rand.Rand) any { return list(n, func(i int) any { return ghIssue(r, 100+i) }) }
}

func ghPulls(n int) func(r *rand.Rand) any {
	return func(r *rand.Rand) any {
		return list(n, func(i int) any {
			p := ghIssue(r, 500+i)
			p["head"] = map[string]any{"ref": "feature/" + words[r.IntN(len(words))], "sha": fmt.Sprintf("%040x", r.Uint64())}
			p["base"] = map[string]any{"ref": "main", "sha": fmt.Sprintf("%040x", r.Uint64())}
			p["draft"] = r.IntN(4) == 0
			p["merged_at"] = nil
			return p
		})
	}
}

func ghFiles(n int) func(r *rand.Rand) any {
	return func(r *rand.Rand) any {
		return list(n, func(i int) any {
			return map[string]any{"sha": fmt.Sprintf("%040x", r.Uint64()), "filename": fmt.Sprintf("internal/%s/%s.go", words[r.IntN(len(words))], words[r.IntN(len(words))]),
				"status": "modified", "additions": r.IntN(80), "deletions": r.IntN(40), "changes": r.IntN(120),
				"patch": "@@ -1,7 +1,9 @@\n" + text(r, 80)}
		})
	}
}

func fileContent(lines int) func(r *rand.Rand) any {
	return func(r *rand.Rand) any {
		var b strings.Builder
		for range lines {
			b.WriteString("\t" + text(r, 4+r.IntN(8)) + "\n")
		}
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": b.String()}}}
	}
}

func dirListing(n int) func(r *rand.Rand) any {
	return func(r *rand.Rand) any {
		var b strings.Builder
		for i := range n {
			kind := "[FILE]"
			if i%7 == 0 {
				kind = "[DIR]"
			}
			fmt.Fprintf(&b, "%s %s_%s.go\n", kind, words[r.IntN(len(words))], words[r.IntN(len(words))])
		}
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": b.String()}}}
	}
}

func slackMessages(n int) func(r *rand.Rand) any {
	return func(r *rand.Rand) any {
		return map[string]any{"ok": true, "has_more": true, "messages": list(n, func(i int) any {
			return map[string]any{"type": "message", "user": fmt.Sprintf("U0%07d", r.IntN(1e7)), "text": text(r, 15+r.IntN(40)),
				"ts": fmt.Sprintf("17%08d.%06d", r.IntN(1e8), r.IntN(1e6)), "thread_ts": fmt.Sprintf("17%08d.000100", r.IntN(1e8)),
				"reply_count": r.IntN(6), "reactions": []any{map[string]any{"name": "eyes", "count": r.IntN(4), "users": []any{"U01"}}},
				"blocks": []any{map[string]any{"type": "rich_text", "block_id": fmt.Sprint(r.IntN(1e6))}}}
		})}
	}
}

func slackChannels(n int) func(r *rand.Rand) any {
	return func(r *rand.Rand) any {
		return map[string]any{"ok": true, "channels": list(n, func(i int) any {
			return map[string]any{"id": fmt.Sprintf("C0%07d", i), "name": words[r.IntN(len(words))] + "-" + words[r.IntN(len(words))], "is_channel": true,
				"created": 1600000000 + r.IntN(1e8), "num_members": r.IntN(300), "topic": map[string]any{"value": text(r, 8)}, "purpose": map[string]any{"value": text(r, 12)}}
		})}
	}
}

func places(n int) func(r *rand.Rand) any {
	return func(r *rand.Rand) any {
		return map[string]any{"places": list(n, func(i int) any {
			return map[string]any{"name": text(r, 3), "formatted_address": fmt.Sprintf("%d %s St, Springfield", r.IntN(900), words[r.IntN(len(words))]),
				"location": map[string]any{"lat": 40 + r.Float64(), "lng": -74 + r.Float64()}, "place_id": fmt.Sprintf("ChIJ%016x", r.Uint64()),
				"rating": 3 + r.Float64()*2, "user_ratings_total": r.IntN(3000), "types": []any{"cafe", "food", "point_of_interest"}, "opening_hours": map[string]any{"open_now": r.IntN(2) == 0}}
		})}
	}
}

func placeDetails(r *rand.Rand) any {
	return map[string]any{"name": text(r, 3), "formatted_address": "12 Main St", "formatted_phone_number": "(555) 010-0199", "website": "https://example.com",
		"rating": 4.4, "reviews": list(5, func(int) any {
			return map[string]any{"author_name": text(r, 2), "rating": 1 + r.IntN(5), "text": text(r, 40+r.IntN(40)), "time": 1700000000 + r.IntN(1e7)}
		}), "opening_hours": map[string]any{"weekday_text": list(7, func(i int) any { return fmt.Sprintf("day %d: 7:00 AM – 6:00 PM", i) })}}
}

func webResults(n int) func(r *rand.Rand) any {
	return func(r *rand.Rand) any {
		return map[string]any{"results": list(n, func(i int) any {
			return map[string]any{"title": text(r, 9), "url": fmt.Sprintf("https://site%d.example/%s", r.IntN(100), words[r.IntN(len(words))]), "description": text(r, 35), "age": ts(r)}
		})}
	}
}

func markdownPage(words int) func(r *rand.Rand) any {
	return func(r *rand.Rand) any {
		var b strings.Builder
		for i := 0; i < words; i += 60 {
			fmt.Fprintf(&b, "## %s\n\n%s\n\n", text(r, 4), text(r, 60))
		}
		return map[string]any{"markdown": b.String(), "metadata": map[string]any{"title": text(r, 6), "statusCode": 200, "sourceURL": "https://docs.example/page"}}
	}
}

func notionPages(n int) func(r *rand.Rand) any {
	return func(r *rand.Rand) any {
		return map[string]any{"object": "list", "has_more": false, "results": list(n, func(i int) any {
			return map[string]any{"object": "page", "id": fmt.Sprintf("%08x-0000-4000-8000-%012x", r.Uint32(), r.Uint64()&0xffffffffffff),
				"created_time": ts(r), "last_edited_time": ts(r), "archived": false, "url": "https://www.notion.so/" + words[r.IntN(len(words))],
				"properties": map[string]any{"Name": map[string]any{"id": "title", "type": "title", "title": []any{map[string]any{"type": "text", "plain_text": text(r, 5)}}},
					"Status": map[string]any{"type": "select", "select": map[string]any{"name": []string{"Todo", "Doing", "Done"}[r.IntN(3)]}},
					"Owner":  map[string]any{"type": "people", "people": []any{map[string]any{"object": "user", "id": fmt.Sprint(r.IntN(1e6))}}}}}
		})}
	}
}

func rows(n int) func(r *rand.Rand) any {
	return func(r *rand.Rand) any {
		return list(n, func(i int) any {
			return map[string]any{"id": i + 1, "customer": text(r, 2), "email": fmt.Sprintf("c%d@example.com", i), "total": float64(r.IntN(100000)) / 100,
				"status": []string{"paid", "open", "refunded"}[r.IntN(3)], "created_at": ts(r), "region": words[r.IntN(len(words))]}
		})
	}
}

func graph(n int) func(r *rand.Rand) any {
	return func(r *rand.Rand) any {
		return map[string]any{"entities": list(n, func(i int) any {
			return map[string]any{"name": fmt.Sprintf("entity_%d", i), "entityType": words[r.IntN(len(words))], "observations": list(3, func(int) any { return text(r, 12) })}
		}), "relations": list(n, func(i int) any {
			return map[string]any{"from": fmt.Sprintf("entity_%d", i), "to": fmt.Sprintf("entity_%d", r.IntN(n)), "relationType": "works_with"}
		})}
	}
}

func ok(r *rand.Rand) any { return map[string]any{"ok": true, "id": r.IntN(1e6)} }

// multiTasks are the tasks; their programs read the outputs above.
func multiTasks() []mtask {
	repo := map[string]any{"owner": "acme", "repo": "app"}
	with := func(m map[string]any, kv ...any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	return []mtask{
		{"open bugs, then the comments of the three newest", []step{
			{"github_list_issues", "list issues of a github repository", with(repo, "state", "open"), ghIssues(30)},
			{"github_get_issue", "get a github issue", with(repo, "issue_number", 100), func(r *rand.Rand) any { return ghIssue(r, 100) }},
			{"github_get_issue", "", with(repo, "issue_number", 101), func(r *rand.Rand) any { return ghIssue(r, 101) }},
			{"github_get_issue", "", with(repo, "issue_number", 102), func(r *rand.Rand) any { return ghIssue(r, 102) }},
		}, `const all = await tools.github_list_issues({owner: "acme", repo: "app", state: "open"});
const top = all.slice(0, 3);
const full = await Promise.all(top.map(i => tools.github_get_issue({owner: "acme", repo: "app", issue_number: i.number})));
return full.map(i => ({number: i.number, title: i.title, comments: i.comments}));`},
		{"search issues then comment on the first", []step{
			{"github_search_issues", "search issues and pull requests", map[string]any{"q": "repo:acme/app timeout"}, func(r *rand.Rand) any { return map[string]any{"total_count": 25, "items": ghIssues(25)(r)} }},
			{"github_add_issue_comment", "comment on an issue", with(repo, "issue_number", 100, "body", "duplicate"), ok},
		}, `const s = await tools.github_search_issues({q: "repo:acme/app timeout"});
const first = s.items[0];
await tools.github_add_issue_comment({owner: "acme", repo: "app", issue_number: first.number, body: "duplicate"});
return {commented: first.number, total: s.total_count};`},
		{"open pull requests and the files of the first two", []step{
			{"github_list_pull_requests", "list pull requests", with(repo, "state", "open"), ghPulls(20)},
			{"github_get_pull_request_files", "files changed in a pull request", with(repo, "pull_number", 500), ghFiles(15)},
			{"github_get_pull_request_files", "", with(repo, "pull_number", 501), ghFiles(15)},
		}, `const prs = await tools.github_list_pull_requests({owner: "acme", repo: "app", state: "open"});
const out = [];
for (const p of prs.slice(0, 2)) {
  const files = await tools.github_get_pull_request_files({owner: "acme", repo: "app", pull_number: p.number});
  out.push({pr: p.number, files: files.length, changes: files.reduce((s, f) => s + f.changes, 0)});
}
return out;`},
		{"recent commits then a file", []step{
			{"github_list_commits", "list commits of a branch", with(repo, "sha", "main"), func(r *rand.Rand) any {
				return list(30, func(i int) any {
					return map[string]any{"sha": fmt.Sprintf("%040x", r.Uint64()), "commit": map[string]any{"message": text(r, 20), "author": map[string]any{"name": text(r, 2), "date": ts(r)}}, "author": ghUser(r), "html_url": "https://github.com/acme/app/commit/x"}
				})
			}},
			{"github_get_file_contents", "get the contents of a file in a repository", with(repo, "path", "README.md"), fileContent(200)},
		}, `const commits = await tools.github_list_commits({owner: "acme", repo: "app", sha: "main"});
const f = await tools.github_get_file_contents({owner: "acme", repo: "app", path: "README.md"});
return {latest: commits[0].commit.message.slice(0, 60), readmeLines: f.content[0].text.split("\n").length};`},
		{"search code then read two files", []step{
			{"github_search_code", "search code in github", map[string]any{"q": "retry repo:acme/app"}, func(r *rand.Rand) any {
				return map[string]any{"total_count": 30, "items": list(30, func(i int) any {
					return map[string]any{"name": fmt.Sprintf("f%d.go", i), "path": fmt.Sprintf("internal/x/f%d.go", i), "sha": fmt.Sprintf("%040x", r.Uint64()), "html_url": "https://github.com/acme/app/blob/main/x", "repository": map[string]any{"full_name": "acme/app", "owner": ghUser(r), "description": text(r, 10)}, "score": 1}
				})}
			}},
			{"github_get_file_contents", "", with(repo, "path", "internal/x/f0.go"), fileContent(300)},
			{"github_get_file_contents", "", with(repo, "path", "internal/x/f1.go"), fileContent(300)},
		}, `const s = await tools.github_search_code({q: "retry repo:acme/app"});
const out = [];
for (const it of s.items.slice(0, 2)) {
  const f = await tools.github_get_file_contents({owner: "acme", repo: "app", path: it.path});
  out.push({path: it.path, retries: (f.content[0].text.match(/retry/g) || []).length});
}
return out;`},
		{"directory tree, then read the two largest files", []step{
			{"fs_list_directory_with_sizes", "list a directory with file sizes", map[string]any{"path": "/src"}, dirListing(120)},
			{"fs_read_text_file", "read a text file", map[string]any{"path": "/src/a.go"}, fileContent(250)},
			{"fs_read_text_file", "", map[string]any{"path": "/src/b.go"}, fileContent(250)},
		}, `const d = await tools.fs_list_directory_with_sizes({path: "/src"});
const files = d.content[0].text.split("\n").filter(l => l.startsWith("[FILE]")).slice(0, 2).map(l => "/src/" + l.slice(7));
const out = [];
for (const p of files) { const f = await tools.fs_read_text_file({path: p}); out.push({path: p, todo: f.content[0].text.includes("fix")}); }
return out;`},
		{"search files and read the matches", []step{
			{"fs_search_files", "search files by name pattern", map[string]any{"path": "/src", "pattern": "*_test.go"}, dirListing(80)},
			{"fs_read_multiple_files", "read several files at once", map[string]any{"paths": []any{"/src/a_test.go", "/src/b_test.go", "/src/c_test.go"}}, fileContent(500)},
		}, `const m = await tools.fs_search_files({path: "/src", pattern: "*_test.go"});
const paths = m.content[0].text.split("\n").filter(Boolean).slice(0, 3).map(l => "/src/" + l.split(" ")[1]);
const f = await tools.fs_read_multiple_files({paths});
return {files: paths.length, lines: f.content[0].text.split("\n").length};`},
		{"file info then edit", []step{
			{"fs_get_file_info", "information about a file", map[string]any{"path": "/src/config.yaml"}, func(r *rand.Rand) any {
				return map[string]any{"size": 4096, "created": ts(r), "modified": ts(r), "permissions": "644"}
			}},
			{"fs_read_text_file", "read a text file", map[string]any{"path": "/src/config.yaml"}, fileContent(150)},
			{"fs_edit_file", "edit lines of a file", map[string]any{"path": "/src/config.yaml", "edits": []any{map[string]any{"oldText": "a", "newText": "b"}}}, ok},
		}, `const i = await tools.fs_get_file_info({path: "/src/config.yaml"});
const f = await tools.fs_read_text_file({path: "/src/config.yaml"});
const line = f.content[0].text.split("\n")[0];
await tools.fs_edit_file({path: "/src/config.yaml", edits: [{oldText: line, newText: line + " # checked"}]});
return {size: i.size, edited: line.trim().slice(0, 40)};`},
		{"channel history, then the threads with most replies", []step{
			{"slack_get_channel_history", "recent messages of a slack channel", map[string]any{"channel_id": "C01", "limit": 50}, slackMessages(50)},
			{"slack_get_thread_replies", "replies in a slack thread", map[string]any{"channel_id": "C01", "thread_ts": "1"}, slackMessages(12)},
			{"slack_get_thread_replies", "", map[string]any{"channel_id": "C01", "thread_ts": "2"}, slackMessages(12)},
		}, `const h = await tools.slack_get_channel_history({channel_id: "C01", limit: 50});
const busy = h.messages.sort((a, b) => b.reply_count - a.reply_count).slice(0, 2);
const out = [];
for (const m of busy) { const t = await tools.slack_get_thread_replies({channel_id: "C01", thread_ts: m.thread_ts}); out.push({ts: m.ts, replies: t.messages.length}); }
return out;`},
		{"find the channel then post a summary", []step{
			{"slack_list_channels", "list slack channels", map[string]any{"limit": 100}, slackChannels(100)},
			{"slack_get_channel_history", "recent messages of a slack channel", map[string]any{"channel_id": "C0000003"}, slackMessages(30)},
			{"slack_post_message", "post a message to a slack channel", map[string]any{"channel_id": "C0000003", "text": "summary"}, ok},
		}, `const c = await tools.slack_list_channels({limit: 100});
const ch = c.channels.find(x => x.num_members > 50) || c.channels[0];
const h = await tools.slack_get_channel_history({channel_id: ch.id});
await tools.slack_post_message({channel_id: ch.id, text: "Summary: " + h.messages.length + " messages"});
return {channel: ch.name, messages: h.messages.length};`},
		{"users then their profiles", []step{
			{"slack_get_users", "list users of the slack workspace", map[string]any{"limit": 100}, func(r *rand.Rand) any {
				return map[string]any{"ok": true, "members": list(100, func(i int) any {
					return map[string]any{"id": fmt.Sprintf("U%08d", i), "name": text(r, 1), "real_name": text(r, 2), "tz": "Europe/Paris", "is_bot": false, "profile": map[string]any{"title": text(r, 3), "email": fmt.Sprintf("u%d@acme.example", i), "image_72": "https://x.example/a.png"}}
				})}
			}},
			{"slack_get_user_profile", "a slack user's profile", map[string]any{"user_id": "U00000001"}, func(r *rand.Rand) any {
				return map[string]any{"ok": true, "profile": map[string]any{"title": text(r, 3), "phone": "", "status_text": text(r, 4)}}
			}},
		}, `const u = await tools.slack_get_users({limit: 100});
const p = await tools.slack_get_user_profile({user_id: u.members[1].id});
return {users: u.members.length, title: p.profile.title};`},
		{"geocode, search places, details of the best", []step{
			{"maps_geocode", "address to coordinates", map[string]any{"address": "10 Downing St"}, func(r *rand.Rand) any {
				return map[string]any{"location": map[string]any{"lat": 51.5, "lng": -0.12}, "formatted_address": "10 Downing St", "place_id": "x"}
			}},
			{"maps_search_places", "search for places nearby", map[string]any{"query": "coffee", "location": map[string]any{"latitude": 51.5, "longitude": -0.12}}, places(20)},
			{"maps_place_details", "details of a place", map[string]any{"place_id": "ChIJ"}, placeDetails},
		}, `const g = await tools.maps_geocode({address: "10 Downing St"});
const p = await tools.maps_search_places({query: "coffee", location: {latitude: g.location.lat, longitude: g.location.lng}});
const best = p.places.sort((a, b) => b.rating - a.rating)[0];
const d = await tools.maps_place_details({place_id: best.place_id});
return {name: best.name, rating: best.rating.toFixed(1), phone: d.formatted_phone_number};`},
		{"places then distances", []step{
			{"maps_search_places", "search for places nearby", map[string]any{"query": "museum"}, places(20)},
			{"maps_distance_matrix", "travel distance and time between places", map[string]any{"origins": []any{"hotel"}, "destinations": []any{"a", "b", "c", "d", "e"}}, func(r *rand.Rand) any {
				return map[string]any{"origin_addresses": []any{"hotel"}, "destination_addresses": list(5, func(int) any { return text(r, 5) }), "results": []any{map[string]any{"elements": list(5, func(int) any {
					return map[string]any{"status": "OK", "duration": map[string]any{"text": "12 mins", "value": 700 + r.IntN(900)}, "distance": map[string]any{"text": "3 km", "value": 3000}}
				})}}}
			}},
		}, `const p = await tools.maps_search_places({query: "museum"});
const five = p.places.slice(0, 5);
const m = await tools.maps_distance_matrix({origins: ["hotel"], destinations: five.map(x => x.formatted_address)});
const el = m.results[0].elements;
const i = el.reduce((b, e, j) => e.duration.value < el[b].duration.value ? j : b, 0);
return {closest: five[i].name, minutes: Math.round(el[i].duration.value / 60)};`},
		{"directions to the best-rated place", []step{
			{"maps_search_places", "search for places nearby", map[string]any{"query": "park"}, places(20)},
			{"maps_directions", "directions between two places", map[string]any{"origin": "station", "destination": "park"}, func(r *rand.Rand) any {
				return map[string]any{"routes": []any{map[string]any{"summary": text(r, 3), "distance": map[string]any{"text": "4 km"}, "duration": map[string]any{"text": "50 mins"}, "steps": list(18, func(int) any {
					return map[string]any{"instructions": text(r, 12), "distance": map[string]any{"text": "200 m"}, "duration": map[string]any{"text": "3 mins"}, "travel_mode": "WALKING"}
				})}}}
			}},
		}, `const p = await tools.maps_search_places({query: "park"});
const best = p.places.sort((a, b) => b.rating - a.rating)[0];
const d = await tools.maps_directions({origin: "station", destination: best.formatted_address, mode: "walking"});
return {to: best.name, duration: d.routes[0].duration.text, steps: d.routes[0].steps.length};`},
		{"web search then scrape the top two", []step{
			{"brave_web_search", "search the web", map[string]any{"query": "goja interrupt", "count": 10}, webResults(10)},
			{"firecrawl_scrape", "scrape a web page as markdown", map[string]any{"url": "https://site.example/a"}, markdownPage(1500)},
			{"firecrawl_scrape", "", map[string]any{"url": "https://site.example/b"}, markdownPage(1500)},
		}, `const s = await tools.brave_web_search({query: "goja interrupt", count: 10});
const out = [];
for (const r of s.results.slice(0, 2)) { const p = await tools.firecrawl_scrape({url: r.url, formats: ["markdown"]}); out.push({url: r.url, mentions: (p.markdown.match(/timeout/g) || []).length}); }
return out;`},
		{"search, extract, then save to memory", []step{
			{"tavily_search", "search the web for recent information", map[string]any{"query": "mcp code mode"}, webResults(10)},
			{"tavily_extract", "extract the content of web pages", map[string]any{"urls": []any{"https://a.example", "https://b.example"}}, markdownPage(2500)},
			{"memory_create_entities", "create entities in the knowledge graph", map[string]any{"entities": []any{map[string]any{"name": "code mode", "entityType": "topic", "observations": []any{"x"}}}}, ok},
		}, `const s = await tools.tavily_search({query: "mcp code mode"});
const e = await tools.tavily_extract({urls: s.results.slice(0, 2).map(r => r.url)});
const facts = e.markdown.split("\n").filter(l => l.startsWith("## ")).slice(0, 3).map(l => l.slice(3));
await tools.memory_create_entities({entities: [{name: "code mode", entityType: "topic", observations: facts}]});
return facts;`},
		{"map a site then scrape the docs page", []step{
			{"firecrawl_map", "list the urls of a website", map[string]any{"url": "https://docs.example"}, func(r *rand.Rand) any {
				return map[string]any{"links": list(150, func(i int) any {
					return map[string]any{"url": fmt.Sprintf("https://docs.example/%s/%d", words[r.IntN(len(words))], i), "title": text(r, 5)}
				})}
			}},
			{"firecrawl_scrape", "scrape a web page as markdown", map[string]any{"url": "https://docs.example/limit/3"}, markdownPage(2000)},
		}, `const m = await tools.firecrawl_map({url: "https://docs.example"});
const page = m.links.find(l => l.url.includes("limit")) || m.links[0];
const p = await tools.firecrawl_scrape({url: page.url, formats: ["markdown"]});
return {url: page.url, headings: p.markdown.split("\n").filter(l => l.startsWith("## ")).length};`},
		{"notion search, read the first page, comment", []step{
			{"notion_API-post-search", "search notion pages", map[string]any{"query": "roadmap"}, notionPages(20)},
			{"notion_API-retrieve-page-markdown", "read a notion page as markdown", map[string]any{"page_id": "x"}, markdownPage(1200)},
			{"notion_API-create-a-comment", "comment on a notion page", map[string]any{"parent": map[string]any{"page_id": "x"}, "rich_text": []any{map[string]any{"text": map[string]any{"content": "ok"}}}}, ok},
		}, `const s = await tools["notion_API-post-search"]({query: "roadmap"});
const pg = s.results.find(p => p.properties.Status.select.name !== "Done") || s.results[0];
const md = await tools["notion_API-retrieve-page-markdown"]({page_id: pg.id});
await tools["notion_API-create-a-comment"]({parent: {page_id: pg.id}, rich_text: [{text: {content: "Reviewed"}}]});
return {page: pg.id, words: md.markdown.split(/\s+/).length};`},
		{"notion database query then update pages", []step{
			{"notion_API-query-data-source", "query a notion database", map[string]any{"data_source_id": "db"}, notionPages(40)},
			{"notion_API-patch-page", "update a notion page's properties", map[string]any{"page_id": "a", "properties": map[string]any{}}, ok},
			{"notion_API-patch-page", "", map[string]any{"page_id": "b", "properties": map[string]any{}}, ok},
		}, `const q = await tools["notion_API-query-data-source"]({data_source_id: "db"});
const todo = q.results.filter(p => p.properties.Status.select.name === "Todo").slice(0, 2);
for (const p of todo) await tools["notion_API-patch-page"]({page_id: p.id, properties: {Status: {select: {name: "Doing"}}}});
return {moved: todo.map(p => p.id)};`},
		{"sql: customers then their invoices", []step{
			{"postgres_query", "run a read-only sql query", map[string]any{"sql": "select * from orders limit 200"}, rows(200)},
			{"postgres_query", "", map[string]any{"sql": "select * from orders where status = 'open'"}, rows(80)},
		}, `const all = await tools.postgres_query({sql: "select * from orders limit 200"});
const open = await tools.postgres_query({sql: "select * from orders where status = 'open'"});
const sum = (xs) => xs.reduce((s, r) => s + r.total, 0);
return {orders: all.length, revenue: sum(all).toFixed(2), open: open.length, openTotal: sum(open).toFixed(2)};`},
		{"knowledge graph: search then open nodes", []step{
			{"memory_search_nodes", "search the knowledge graph", map[string]any{"query": "team"}, graph(40)},
			{"memory_open_nodes", "open knowledge graph nodes by name", map[string]any{"names": []any{"entity_0", "entity_1"}}, graph(2)},
			{"memory_add_observations", "add observations to entities", map[string]any{"observations": []any{}}, ok},
		}, `const s = await tools.memory_search_nodes({query: "team"});
const names = s.entities.slice(0, 2).map(e => e.name);
const n = await tools.memory_open_nodes({names});
await tools.memory_add_observations({observations: names.map(x => ({entityName: x, contents: ["reviewed"]}))});
return {opened: n.entities.length, names};`},
		{"gitlab: find the project, read a file, open an issue", []step{
			{"gitlab_search_repositories", "search gitlab projects", map[string]any{"search": "billing"}, func(r *rand.Rand) any {
				return map[string]any{"count": 20, "items": list(20, func(i int) any {
					return map[string]any{"id": 1000 + i, "name": text(r, 2), "path_with_namespace": "acme/" + words[r.IntN(len(words))], "description": text(r, 20), "default_branch": "main", "web_url": "https://gitlab.example/acme/x", "star_count": r.IntN(40), "last_activity_at": ts(r)}
				})}
			}},
			{"gitlab_get_file_contents", "get a file of a gitlab project", map[string]any{"project_id": "1000", "file_path": "CHANGELOG.md"}, fileContent(300)},
			{"gitlab_create_issue", "create a gitlab issue", map[string]any{"project_id": "1000", "title": "x"}, ok},
		}, `const s = await tools.gitlab_search_repositories({search: "billing"});
const p = s.items.sort((a, b) => b.star_count - a.star_count)[0];
const f = await tools.gitlab_get_file_contents({project_id: String(p.id), file_path: "CHANGELOG.md"});
const first = f.content[0].text.split("\n")[0].trim();
await tools.gitlab_create_issue({project_id: String(p.id), title: "Release notes: " + first.slice(0, 40)});
return {project: p.path_with_namespace, first};`},
		{"five-step triage: issues, PRs, a file, a slack post, a comment", []step{
			{"github_list_issues", "list issues of a github repository", with(repo, "labels", []any{"bug"}), ghIssues(30)},
			{"github_list_pull_requests", "list pull requests", with(repo, "state", "open"), ghPulls(20)},
			{"github_get_file_contents", "get the contents of a file in a repository", with(repo, "path", "CODEOWNERS"), fileContent(60)},
			{"slack_post_message", "post a message to a slack channel", map[string]any{"channel_id": "C01", "text": "triage"}, ok},
			{"github_add_issue_comment", "comment on an issue", with(repo, "issue_number", 100, "body", "triaged"), ok},
		}, `const issues = await tools.github_list_issues({owner: "acme", repo: "app", labels: ["bug"]});
const prs = await tools.github_list_pull_requests({owner: "acme", repo: "app", state: "open"});
const owners = await tools.github_get_file_contents({owner: "acme", repo: "app", path: "CODEOWNERS"});
const orphan = issues.filter(i => !prs.some(p => p.body.includes("#" + i.number)));
await tools.slack_post_message({channel_id: "C01", text: orphan.length + " bugs without a PR"});
await tools.github_add_issue_comment({owner: "acme", repo: "app", issue_number: orphan[0].number, body: "Triaged; owners: " + owners.content[0].text.split("\n").length + " rules"});
return {bugs: issues.length, withoutPR: orphan.length, commented: orphan[0].number};`},
	}
}

// modeFigures are one discovery mode's counts over the tasks.
type modeFigures struct {
	turns, modelCalls, backendCalls int
	defs, results, written          int // tokens: definitions offered (sum over turns), results read, model-written (calls, programs)
	billed                          int // input tokens if every turn resends the conversation
}

func (m modeFigures) through() int { return m.defs + m.results + m.written }

// countFn counts a text's tokens.
type countFn func(string) int

// playTask plays one task in the three modes against a catalogue whose
// definitions cost defs tokens per turn (full) and whose search finds
// tools (search, code), and adds its figures.
func playTask(t mtask, r *rand.Rand, fullDefs, searchDefs, codeDefs int, find func(q string, code bool) string, count countFn, f *[3]modeFigures) error {
	outs := make([]string, len(t.Steps))
	byCall := map[string]string{}
	for i, s := range t.Steps {
		outs[i] = mustJSON(s.Out(r))
		byCall[s.Tool+"#"+fmt.Sprint(i)] = outs[i]
	}
	// full: one turn per call, then the answer.
	var full modeFigures
	ctxTok := 0
	for i, s := range t.Steps {
		w := count(mustJSON(map[string]any{"name": s.Tool, "arguments": s.Args}))
		full.billed += fullDefs + ctxTok
		ctxTok += w + count(outs[i])
		full.written += w
		full.results += count(outs[i])
	}
	full.billed += fullDefs + ctxTok
	full.turns = len(t.Steps) + 1
	full.defs = fullDefs * full.turns
	full.modelCalls, full.backendCalls = len(t.Steps), len(t.Steps)

	// search: one search per distinct tool, one call_tool per call.
	var distinct []step
	for _, s := range t.Steps {
		if s.Query != "" && !slices.ContainsFunc(distinct, func(d step) bool { return d.Tool == s.Tool }) {
			distinct = append(distinct, s)
		}
	}
	var search modeFigures
	ctxTok = 0
	for _, d := range distinct {
		w := count(mustJSON(map[string]any{"name": "search_tools", "arguments": map[string]any{"query": d.Query, "limit": 3}}))
		a := count(find(d.Query, false))
		search.billed += searchDefs + ctxTok
		ctxTok += w + a
		search.written += w
		search.results += a
	}
	for i, s := range t.Steps {
		w := count(mustJSON(map[string]any{"name": "call_tool", "arguments": map[string]any{"name": s.Tool, "arguments": s.Args}}))
		search.billed += searchDefs + ctxTok
		ctxTok += w + count(outs[i])
		search.written += w
		search.results += count(outs[i])
	}
	search.billed += searchDefs + ctxTok
	search.turns = len(distinct) + len(t.Steps) + 1
	search.defs = searchDefs * search.turns
	search.modelCalls, search.backendCalls = len(distinct)+len(t.Steps), len(t.Steps)

	// code: the same searches (signatures only), one execute_code, the answer.
	var code modeFigures
	ctxTok = 0
	for _, d := range distinct {
		w := count(mustJSON(map[string]any{"name": "search_tools", "arguments": map[string]any{"query": d.Query, "limit": 3}}))
		a := count(find(d.Query, true))
		code.billed += codeDefs + ctxTok
		ctxTok += w + a
		code.written += w
		code.results += a
	}
	res, calls, err := runProgram(t, outs)
	if err != nil {
		return err
	}
	w := count(mustJSON(map[string]any{"name": "execute_code", "arguments": map[string]any{"code": t.Program}}))
	a := count(res)
	code.billed += codeDefs + ctxTok
	ctxTok += w + a
	code.written += w
	code.results += a
	code.billed += codeDefs + ctxTok
	code.turns = len(distinct) + 2
	code.defs = codeDefs * code.turns
	code.modelCalls, code.backendCalls = len(distinct)+1, calls
	for i, m := range []modeFigures{full, search, code} {
		f[i].turns += m.turns
		f[i].modelCalls += m.modelCalls
		f[i].backendCalls += m.backendCalls
		f[i].defs += m.defs
		f[i].results += m.results
		f[i].written += m.written
		f[i].billed += m.billed
	}
	return nil
}

// stepCaller answers a program's calls with the task's outputs, in
// order per tool.
type stepCaller struct {
	t     mtask
	outs  []string
	used  []bool
	calls int
}

func (c *stepCaller) Call(_ context.Context, name string, _ map[string]any) codemode.Reply {
	c.calls++
	for i, s := range c.t.Steps {
		if s.Tool == name && !c.used[i] {
			c.used[i] = true
			return codemode.Reply{Output: json.RawMessage(c.outs[i]), ToolCallID: fmt.Sprintf("tc_%d", i)}
		}
	}
	return codemode.Reply{Err: "no scripted output left for " + name}
}

// runProgram runs the task's program in the real engine over its
// outputs and returns execute_code's answer as the model reads it.
func runProgram(t mtask, outs []string) (string, int, error) {
	c := &stepCaller{t: t, outs: outs, used: make([]bool, len(outs))}
	var names []string
	for _, s := range t.Steps {
		if !slices.Contains(names, s.Tool) {
			names = append(names, s.Tool)
		}
	}
	res, err := codemode.NewEngine(codemode.DefaultLimits(), 1).Run(context.Background(), t.Program, names, c)
	if err != nil {
		return "", 0, err
	}
	if res.Error != nil {
		return "", 0, fmt.Errorf("task %q: the program failed: %+v", t.Name, res.Error)
	}
	if c.calls != len(t.Steps) {
		return "", 0, fmt.Errorf("task %q: the program made %d calls, the task has %d", t.Name, c.calls, len(t.Steps))
	}
	return mustJSON(res), c.calls, nil
}
