// Reader capability: applications, top-level windows and a window's accessibility tree.
// Blocking; called on the desktop thread only (see task_thread.h).
#pragma once
#include "common/desktop_types.h"

namespace runboard::desktop {

std::vector<WindowInfo> ListWindows(const WindowQuery& filter);
std::vector<AppInfo> ListApps();
ReadResult ReadTree(const ReadOptions& options);
// For long-lived processes (observe, serve): keep each window's tree between reads, brought up to date
// by the accessibility events that name what changed (Linux: tree_cache.h). Off by default.
void KeepTrees(bool on);

// The naive walk (one accessibility call per attribute per node), kept only as the benchmark's
// baseline for ReadTree. Returns the number of nodes visited.
int NaiveWalkForBench(const WindowQuery& target);

}  // namespace runboard::desktop
