-- once.toml support in Neovim (0.8+): starts `once lsp` for every `once.toml` buffer.
-- Put this file in ~/.config/nvim/plugin/ (or `require` it from init.lua).

-- Neovim 0.8 added `vim.lsp.start` and `vim.fs`; on older versions say so once, in one
-- line, instead of a Lua traceback on every `once.toml` buffer.
if vim.fn.has("nvim-0.8") == 0 then
  vim.api.nvim_err_writeln(
    "once.lua: Neovim 0.8 or newer is required (vim.lsp.start, vim.fs); once lsp is not started"
  )
  return
end

local function workspace_root(file)
  -- The outermost directory whose once.toml declares `[workspace]`, else the file's directory.
  local root = vim.fs.dirname(file)
  for dir in vim.fs.parents(file) do
    local manifest = dir .. "/once.toml"
    if vim.fn.filereadable(manifest) == 1 then
      for _, line in ipairs(vim.fn.readfile(manifest)) do
        if line:match("^%s*%[workspace%]") then
          root = dir
        end
      end
    end
  end
  return root
end

vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
  pattern = "once.toml",
  group = vim.api.nvim_create_augroup("once_lsp", { clear = true }),
  callback = function(args)
    vim.lsp.start({
      name = "once",
      cmd = { "once", "lsp" },
      root_dir = workspace_root(vim.api.nvim_buf_get_name(args.buf)),
      -- Offer UTF-8 positions; `once lsp` picks them over UTF-16 when offered.
      capabilities = vim.tbl_deep_extend("force", vim.lsp.protocol.make_client_capabilities(), {
        general = { positionEncodings = { "utf-8", "utf-16" } },
      }),
    })
  end,
})
