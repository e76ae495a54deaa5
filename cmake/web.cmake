# Builds web/ with npm (Vite) and embeds web/dist into the program, so the
# binary alone serves the page. With RETRYSTORM_WEB=OFF a stub page is used.
set(WEB_ASSETS_CPP ${CMAKE_BINARY_DIR}/generated/web_assets.cpp)
if(RETRYSTORM_WEB)
  # GLOB_RECURSE only under src/: a recursive pattern such as web/package.json
  # would also match every package.json in node_modules and the built dist/.
  file(GLOB_RECURSE WEB_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/web/src/*)
  file(GLOB WEB_TOP CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/web/index.html
       ${CMAKE_SOURCE_DIR}/web/package.json ${CMAKE_SOURCE_DIR}/web/package-lock.json
       ${CMAKE_SOURCE_DIR}/web/vite.config.* ${CMAKE_SOURCE_DIR}/web/tsconfig.json)
  set(WEB_INPUTS ${WEB_SOURCES} ${WEB_TOP})
  add_custom_command(
    OUTPUT ${WEB_ASSETS_CPP}
    COMMAND npm run build --silent
    COMMAND ${CMAKE_COMMAND} -DOUT=${WEB_ASSETS_CPP} -DDIR=${CMAKE_SOURCE_DIR}/web/dist
            -P ${CMAKE_SOURCE_DIR}/cmake/embed_dir.cmake
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/web
    DEPENDS ${WEB_INPUTS} ${CMAKE_SOURCE_DIR}/cmake/embed_dir.cmake
    COMMENT "Building the web page (npm run build) and embedding it"
    VERBATIM)
else()
  add_custom_command(
    OUTPUT ${WEB_ASSETS_CPP}
    COMMAND ${CMAKE_COMMAND} -DOUT=${WEB_ASSETS_CPP} -DDIR= -P
            ${CMAKE_SOURCE_DIR}/cmake/embed_dir.cmake
    DEPENDS ${CMAKE_SOURCE_DIR}/cmake/embed_dir.cmake
    COMMENT "Embedding no web page (RETRYSTORM_WEB=OFF)"
    VERBATIM)
endif()
