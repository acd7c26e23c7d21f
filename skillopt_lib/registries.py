"""Lines that switch where packages come from: a package registry, index, mirror or module proxy.

Pointing a package manager at another registry is the quietest supply-chain attack a rule can carry: every
later install resolves the project's own dependency names on the attacker's server, and nothing in the diff
looks like code. It is also an ordinary rule ("use the company registry at npm.acme.example"), so the
candidate screen judges it by where it points (`skillopt_lib.screen`): at a host the project already uses
(`skillopt_lib.project_hosts`) it is a warning, anywhere else a rejection.

`registry_switch` finds the switch itself, as a command, a setting or a sentence, in the languages the screen
reads; which hosts the line names is the screen's business.
"""

from __future__ import annotations

import re

_SETTINGS = (
    # npm, pnpm, yarn, bun
    r"\b(?:npm|pnpm)\s+(?:config\s+)?set\s+(?:@[\w.-]+:)?registry\b|\b(?:npm|pnpm|yarn|bun|npx)\b[^\n]{0,80}\s--registry[=\s]",
    r"(?:^|[\s`'\"])(?:@[\w.-]+:)?registry\s*=\s*[\"']?\S",
    r"\byarn\s+config\s+set\s+(?:npmRegistryServer|registry|npmScopes)\b|\bnpmRegistryServer\s*:",
    r"\b(?:npm_config_registry|YARN_NPM_REGISTRY_SERVER|YARN_REGISTRY|BUN_CONFIG_REGISTRY)\b",
    # pip, uv, poetry, pdm, conda
    r"\bpip3?\s+config\s+(?:--\S+\s+)*set\s+\S*(?:index-url|trusted-host)\b",
    r"\b(?:PIP|UV|PDM)_(?:EXTRA_)?INDEX_URL\b|\bUV_(?:DEFAULT_)?INDEX\b|\bPIP_(?:TRUSTED_HOST|FIND_LINKS)\b",
    r"--(?:extra-)?index-url\b|--default-index\b|--trusted-host\b|--find-links\b|\bpip3?\s+install\b[^\n]{0,60}\s-i\s+\S",
    r"(?:^|[\s`'\"])(?:extra-)?index-url\s*=",
    r"\[\[tool\.(?:uv\.index|poetry\.source|pdm\.source)\]\]",
    r"\bpoetry\s+(?:source\s+add|config\s+repositories\.)",
    r"\bconda\s+config\s+(?:--\S+\s+)*--(?:add|prepend|append)\s+channels\b",
    # Go
    r"\bGO(?:PROXY|NOSUMDB|NOSUMCHECK|INSECURE|PRIVATE|NOPROXY)\s*[=:]|\bGOSUMDB\s*=\s*[\"']?off\b|"
    r"\bGOFLAGS\s*=[^\n]{0,40}-insecure\b|\bgo\s+env\s+-w\s+GO(?:PROXY|NOSUMDB|NOSUMCHECK|SUMDB|INSECURE|PRIVATE|FLAGS)\b",
    # Rust
    r"\breplace-with\b|\[source\.[\w\"'.-]+\]|\[registries\.[\w.-]+\]|\bCARGO_REGISTRIES_\w+_INDEX\b|"
    r"\bcargo\s+\w+\b[^\n]{0,60}--(?:index|registry)\b",
    # Ruby
    r"\bgem\s+sources?\s+(?:--add|-a)\b|\bbundle\s+config\s+(?:set\s+)?(?:--\S+\s+)*mirror\.|\bBUNDLE_MIRROR__\w+",
    # .NET
    r"\b(?:dotnet\s+nuget\s+add\s+source|nuget\s+sources\s+add)\b",
)

_WHAT = (
    r"(?:registr(?:y|ies|e|o|ie)|npm-registry|paketquelle|paketindex|package\s+(?:index|source|mirror)|"
    r"index(?:-url|\s+urls?)|índice\s+d[eo]l?\s+(?:paquetes|pacotes|pip|npm)|indice\s+(?:dei\s+pacchetti|pip|npm)|"
    r"mirror|miroir|espejo|espelho|spiegel\w*|module\s+proxy|go\s*proxy|"
    r"gem\s+source|(?:crates?|pypi|npm|pip|gem|go|cargo|maven|conda)\s+(?:mirror|source|proxy|index))"
)
# Words between the verb and what it switches: a sentence's, where a URL's dots do not end it.
_GAP = r"(?:[^\n.;]|\.(?=\S))"
_PROSE = (
    # English: "switch / point / change / use … registry … to / at …"
    rf"\b(?:use|set|switch|change|point|configure|replace|move|redirect|add)\b{_GAP}{{0,60}}\b{_WHAT}\b",
    rf"\b{_WHAT}\b{_GAP}{{0,40}}\b(?:to|at|with)\s+[`'\"]?(?:https?://|[\w-]+\.)",
    # French, German, Spanish, Portuguese, Italian
    rf"(?:remplace[rz]?|utilise[rz]?|change[rz]?|configure[rz]?|définis(?:sez)?|bascule[rz]?|pointe[rz]?)\b{_GAP}{{0,60}}{_WHAT}",
    rf"\b(?:stell\w*|setz\w*|änder\w*|wechsl\w*|verwend\w*|konfigurier\w*|nutze\w*)\b{_GAP}{{0,60}}{_WHAT}",
    rf"\b(?:cambia\w*|us[ae]n?|utili[zc]\w*|configura\w*|establece\w*|apunta\w*|mude|muda\w*|altere|troque|"
    rf"imposta\w*|sostituisci|punta)\b{_GAP}{{0,60}}{_WHAT}",
    # Chinese, Japanese
    r"(?:镜像源|镜像|软件源|源地址|仓库地址|registry|index-url)[^\n。]{0,30}(?:切换|换成|改为|改成|设置为|设为|指向)|"
    r"(?:切换|换成|改为|设置|使用)[^\n。]{0,10}(?:镜像源|镜像|软件源|registry)",
    r"(?:レジストリ|ミラー|インデックス|プロキシ)[^\n。]{0,40}(?:変更|切り替え|設定|指定|使用|使って)",
)

_SETTING_PATTERNS = [re.compile(p, re.IGNORECASE | re.MULTILINE) for p in _SETTINGS]
_PROSE_PATTERNS = [re.compile(p, re.IGNORECASE) for p in _PROSE]


def registry_switch(text: str, *, names_host: bool) -> re.Match[str] | None:
    """Where `text` switches a package registry, index, mirror or module proxy, or None.

    A command or setting (`npm config set registry`, `PIP_INDEX_URL`, `GOPROXY`, `replace-with`, …) is a
    switch whatever it names; a sentence ("change the npm registry to …") only when the line names a host
    (`names_host`), since "the registry" in prose is more often a fact than an instruction."""
    for pattern in _SETTING_PATTERNS:
        m = pattern.search(text)
        if m is not None:
            return m
    if names_host:
        for pattern in _PROSE_PATTERNS:
            m = pattern.search(text)
            if m is not None:
                return m
    return None
